from harness.app.entry import main

main()
