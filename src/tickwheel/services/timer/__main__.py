from tickwheel.services.timer.service import main

main()
