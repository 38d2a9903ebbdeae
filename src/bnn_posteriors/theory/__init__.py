"""Closed forms and lemmas: the narrow network ([SAP] §2.1, App. F.1) and the convexified ReLU
network ([SAP] §2.3, App. E)."""
