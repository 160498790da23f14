import ClarionCore
import Foundation
import ClarionCrypto

/// Where the key that seals credentials at rest comes from.
enum MasterKeySource {
    /// `CLARION_MASTER_KEY`; or, for the embedded default only, a key generated once into
    /// `<data dir>/master.key` (mode 0600). A node on a shared database must be given the key: a key
    /// generated on one node would not open what another node sealed.
    static func resolve(_ configuration: Configuration, embedded: Bool, log: Log) throws(NodeError) -> AESGCMKey {
        if let text = configuration.masterKey {
            do { return try AESGCMKey(text: text) } catch {
                throw NodeError(.configuration, "CLARION_MASTER_KEY: \(error.message)")
            }
        }
        guard embedded else {
            throw NodeError(.configuration, "CLARION_MASTER_KEY is required with CLARION_DATABASE_URL "
                + "(every node of a shared database must use the same key; generate one with `openssl rand -base64 32`)")
        }
        let path = URL(fileURLWithPath: configuration.dataDirectory).appendingPathComponent("master.key").path
        if let text = try? String(contentsOfFile: path, encoding: .utf8) {
            do { return try AESGCMKey(text: text) } catch {
                throw NodeError(.configuration, "\(path): \(error.message)")
            }
        }
        let key = AESGCMKey.generate()
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else { throw NodeError(.configuration, "cannot create \(path): \(String(cString: strerror(errno)))") }
        // The key is used only once it is on disk: credentials sealed with a key that was never stored can never be
        // opened again. write(2) may write part of the text or fail (ENOSPC, EIO), and fsync and close report
        // late write errors, so all three results are checked; a file that may be incomplete is removed.
        var failure = writeAll(fd, Array((key.base64 + "\n").utf8))
        if failure == nil && fsync(fd) != 0 { failure = errno }
        if close(fd) != 0 && failure == nil { failure = errno }
        if let failure {
            unlink(path)
            throw NodeError(.configuration, "cannot write \(path): \(String(cString: strerror(failure)))")
        }
        log.warning("generated a master key; back it up: credentials stored in the database open only with it",
                    ["path": path])
        return key
    }

    /// Writes all of `bytes` to `fd`, after short writes and EINTR too; nil when done, else the errno.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Int32? {
        bytes.withUnsafeBytes { raw -> Int32? in
            var offset = 0
            while offset < raw.count {
                let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n > 0 {
                    offset += n
                } else if n < 0 && errno == EINTR {
                    continue
                } else {
                    return n < 0 ? errno : EIO
                }
            }
            return nil
        }
    }
}
