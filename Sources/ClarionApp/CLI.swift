import Foundation

extension CommandLine {
    /// Entry point of the `clarion` executable; returns the process exit code.
    public static func run(arguments: [String]) -> Int32 {
        0
    }
}
