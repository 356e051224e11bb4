from tickwheel.services.watchdog.service import main

main()
