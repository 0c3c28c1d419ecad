from kfdguard.cli import main

raise SystemExit(main())
