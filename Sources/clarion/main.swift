import Foundation
import ClarionApp

exit(CommandLine.run(arguments: Array(CommandLine.arguments.dropFirst())))
