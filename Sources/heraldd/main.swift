// heraldd: arguments → config → server → run → exit code. The work lives in HeraldServer.
import HeraldServer
#if canImport(Glibc)
import Glibc
#endif

exit(Daemon.run(arguments: Array(CommandLine.arguments.dropFirst())))
