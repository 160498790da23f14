import Foundation

/// One PEM block: the label between the `BEGIN`/`END` lines and the DER bytes it carries.
///
/// Parsing is done here in Swift rather than by OpenSSL's PEM reader so that every key goes through
/// one DER path, an encrypted key is refused up front (OpenSSL would otherwise prompt on the
/// terminal for a passphrase), and the error names what was found ("expected a private key, found a
/// CERTIFICATE") instead of an opaque OpenSSL error string.
public struct PEMBlock: Sendable, Equatable {
    /// The label, e.g. `PRIVATE KEY`, `EC PRIVATE KEY`, `RSA PRIVATE KEY`, `PUBLIC KEY`, `CERTIFICATE`.
    public let label: String
    public let der: [UInt8]

    public init(label: String, der: [UInt8]) {
        self.label = label
        self.der = der
    }

    /// Every block in `text`, in order. Text outside blocks is ignored (a certificate bundle or a
    /// file with comments parses); a block that is opened but broken is an error.
    ///
    /// Literal `\n` escapes are accepted as line breaks, so a `private_key` value copied out of a
    /// Google service-account JSON without unescaping still parses.
    public static func parseAll(_ text: String) throws(CryptoError) -> [PEMBlock] {
        let normalized = text.contains("\\n") ? text.replacingOccurrences(of: "\\n", with: "\n") : text
        var blocks: [PEMBlock] = []
        var label: String?
        var body = ""
        var sawHeaders = false
        for rawLine in normalized.split(omittingEmptySubsequences: true, whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if let current = label {
                if line.hasPrefix("-----END "), line.hasSuffix("-----") {
                    let endLabel = String(line.dropFirst(9).dropLast(5))
                    guard endLabel == current else {
                        throw CryptoError(.invalidPEM, "PEM block BEGIN \(current) ends with END \(endLabel)")
                    }
                    if sawHeaders {
                        throw CryptoError(.invalidPEM, "PEM block \(current) is encrypted; an unencrypted key is required")
                    }
                    guard let data = Data(base64Encoded: body), !data.isEmpty else {
                        throw CryptoError(.invalidPEM, "PEM block \(current) is not valid base64")
                    }
                    blocks.append(PEMBlock(label: current, der: [UInt8](data)))
                    label = nil
                    body = ""
                } else if line.contains(":") {
                    // RFC 1421 headers such as `Proc-Type: 4,ENCRYPTED` mark a legacy encrypted key.
                    sawHeaders = true
                } else {
                    body += line
                }
            } else if line.hasPrefix("-----BEGIN "), line.hasSuffix("-----") {
                label = String(line.dropFirst(11).dropLast(5))
                sawHeaders = false
            }
        }
        if let open = label {
            throw CryptoError(.invalidPEM, "PEM block \(open) has no END line")
        }
        return blocks
    }

    /// The first block in `text`; an error when there is none.
    public static func parse(_ text: String) throws(CryptoError) -> PEMBlock {
        guard let first = try parseAll(text).first else {
            throw CryptoError(.invalidPEM, "no PEM block found (expected -----BEGIN ...-----)")
        }
        return first
    }

    /// The text form, base64 wrapped at 64 columns, ending with a newline.
    public var text: String {
        let encoded = Data(der).base64EncodedString()
        var out = "-----BEGIN \(label)-----\n"
        var index = encoded.startIndex
        while index < encoded.endIndex {
            let end = encoded.index(index, offsetBy: 64, limitedBy: encoded.endIndex) ?? encoded.endIndex
            out += encoded[index..<end]
            out += "\n"
            index = end
        }
        out += "-----END \(label)-----\n"
        return out
    }
}
