from kfdguard.service.main import run

run()
