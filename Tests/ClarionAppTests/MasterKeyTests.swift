@testable import ClarionApp
import ClarionCore
import Foundation
import Testing

@Suite struct MasterKeyTests {
    /// Rule: write(2) may write less than asked or fail (ENOSPC): its result must be checked. The generated master
    /// key is used only once it is stored; unchecked, a full disk left an empty key file behind and the node sealed
    /// credentials with a key that was never stored.
    @Test func aWriteThatFailsIsReported() throws {
        let fd = open("/dev/full", O_WRONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        #expect(MasterKeySource.writeAll(fd, Array("a key\n".utf8)) == ENOSPC)
    }

    @Test func aGeneratedKeyIsStoredWholeAndReadBack() throws {
        let directory = NSTemporaryDirectory() + "clarion-master-key-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var configuration = Configuration()
        configuration.dataDirectory = directory
        let generated = try MasterKeySource.resolve(configuration, embedded: true, log: Log("test"))
        let again = try MasterKeySource.resolve(configuration, embedded: true, log: Log("test"))
        #expect(generated.base64 == again.base64)
        let text = try String(contentsOfFile: directory + "/master.key", encoding: .utf8)
        #expect(text == generated.base64 + "\n")
    }
}
