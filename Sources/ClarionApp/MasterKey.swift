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
        let text = key.base64 + "\n"
        _ = text.withCString { write(fd, $0, strlen($0)) }
        fsync(fd)
        close(fd)
        log.warning("generated a master key; back it up: credentials stored in the database open only with it",
                    ["path": path])
        return key
    }
}
