from bnn_posteriors.cli.main import main

raise SystemExit(main())
