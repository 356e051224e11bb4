from tickwheel.services.jobwriter.service import main

main()
