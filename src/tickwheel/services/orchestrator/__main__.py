from tickwheel.services.orchestrator.service import main

main()
