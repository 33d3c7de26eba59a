from fscontrol.cli.main import main

main()
