import Foundation

/// The `openssl` command-line tool, used as an independent implementation to check ours against.
enum OpenSSLCLI {
    static let path = "/usr/bin/openssl"

    static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: path) }

    /// Runs `openssl` with `arguments` in `directory`; returns stdout, throws with stderr on failure.
    @discardableResult
    static func run(_ arguments: [String], in directory: URL) throws -> Data {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        process.currentDirectoryURL = directory
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        let errors = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CLIError(status: process.terminationStatus, stderr: String(decoding: errors, as: UTF8.self))
        }
        return output
    }

    struct CLIError: Error, CustomStringConvertible {
        let status: Int32
        let stderr: String
        var description: String { "openssl exited \(status): \(stderr)" }
    }
}

/// A fresh temporary directory, removed by `remove()`.
struct ScratchDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("clarion-crypto-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func write(_ name: String, _ bytes: [UInt8]) throws {
        try Data(bytes).write(to: url.appendingPathComponent(name))
    }

    func write(_ name: String, _ text: String) throws {
        try Data(text.utf8).write(to: url.appendingPathComponent(name))
    }

    func read(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: url.appendingPathComponent(name)))
    }

    func readText(_ name: String) throws -> String {
        String(decoding: try read(name), as: UTF8.self)
    }

    func remove() { try? FileManager.default.removeItem(at: url) }
}
