from bnn_posteriors.cli import main

raise SystemExit(main())
