import ClarionApp
import Foundation

exit(CLI.run(arguments: Array(CommandLine.arguments.dropFirst())))
