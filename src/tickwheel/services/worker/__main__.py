from tickwheel.services.worker.service import main

main()
