from tickwheel.services.history.service import main

main()
