from kfdguard.service.main import main

raise SystemExit(main())
