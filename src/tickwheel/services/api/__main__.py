from tickwheel.services.api.service import main

main()
