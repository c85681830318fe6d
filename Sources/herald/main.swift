import Foundation

// `herald`: the command-line client. All logic is in `Commands`; this only exits with its code.
let code = await Commands.run(Array(CommandLine.arguments.dropFirst()))
exit(code.rawValue)
