"""``python -m hudi_duck``: the hudi-duck shell."""

from .shell import main

raise SystemExit(main())
