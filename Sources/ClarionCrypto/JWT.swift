import ClarionCore

/// JSON Web Tokens in the compact JWS form `header.payload.signature` (RFC 7515/7519), base64url
/// without padding, signed ES256 or RS256.
///
/// Signing is for Clarion's provider credentials (the APNs provider token, the Google service-account
/// assertion); decoding and verifying is for the emulator, which checks those tokens as the providers do.
public enum JWT {
    /// Signs a token with `key`. `alg` is set from the key; every other header member (APNs needs
    /// `kid`, Google wants `typ: JWT`) comes from `header`. Object keys are serialised sorted.
    public static func sign(header: JSONObject = [:], claims: JSONObject, key: SigningKey) throws(CryptoError) -> String {
        var fullHeader = header
        fullHeader["alg"] = .string(key.algorithm.rawValue)
        return try sign(headerJSON: fullHeader.encodedSortingKeys(), claimsJSON: claims.encodedSortingKeys(), key: key)
    }

    /// Signs already-serialised header and claims JSON as given. The caller is responsible for the
    /// header's `alg` matching the key.
    public static func sign(headerJSON: [UInt8], claimsJSON: [UInt8], key: SigningKey) throws(CryptoError) -> String {
        var signingInput = Base64URL.encodeBytes(headerJSON)
        signingInput.append(UInt8(ascii: "."))
        signingInput.append(contentsOf: Base64URL.encodeBytes(claimsJSON))
        let signature = try key.sign(signingInput)
        signingInput.append(UInt8(ascii: "."))
        signingInput.append(contentsOf: Base64URL.encodeBytes(signature))
        return String(decoding: signingInput, as: UTF8.self)
    }

    /// Splits and decodes a token without checking its signature: the emulator reads `kid`/`iss`
    /// first to pick the key, then calls `DecodedJWT.verify(with:)`.
    public static func decode(_ token: String) throws(CryptoError) -> DecodedJWT {
        try DecodedJWT(token: token)
    }

    /// Decodes and verifies in one step; the header's `alg` must be the key's algorithm.
    public static func verify(_ token: String, key: VerifyingKey) throws(CryptoError) -> DecodedJWT {
        let decoded = try DecodedJWT(token: token)
        try decoded.verify(with: key)
        return decoded
    }
}

/// A decoded compact JWS: header and claims as JSON objects, and what the signature covers.
public struct DecodedJWT: Sendable {
    public let header: JSONObject
    public let claims: JSONObject
    /// The `alg` header member, parsed; nil when absent or not ES256/RS256.
    public let algorithm: SigningAlgorithm?
    /// `base64url(header) "." base64url(claims)`, the bytes the signature is over.
    public let signingInput: [UInt8]
    public let signature: [UInt8]

    init(token: String) throws(CryptoError) {
        let bytes = Array(token.utf8)
        let dots = bytes.indices.filter { bytes[$0] == UInt8(ascii: ".") }
        guard dots.count == 2 else {
            throw CryptoError(.malformedToken, "a compact JWS has three dot-separated parts, this token has \(dots.count + 1)")
        }
        let headerPart = bytes[..<dots[0]]
        let claimsPart = bytes[(dots[0] + 1)..<dots[1]]
        let signaturePart = bytes[(dots[1] + 1)...]
        guard let headerJSON = Base64URL.decode(bytes: headerPart),
              let claimsJSON = Base64URL.decode(bytes: claimsPart),
              let signature = Base64URL.decode(bytes: signaturePart)
        else {
            throw CryptoError(.malformedToken, "a part is not unpadded base64url")
        }
        guard case .object(let header)? = try? JSONValue.parse(bytes: headerJSON, duplicateKeys: .reject) else {
            throw CryptoError(.malformedToken, "the header is not a JSON object")
        }
        guard case .object(let claims)? = try? JSONValue.parse(bytes: claimsJSON, duplicateKeys: .reject) else {
            throw CryptoError(.malformedToken, "the claims set is not a JSON object")
        }
        self.header = header
        self.claims = claims
        self.algorithm = header["alg"]?.stringValue.flatMap(SigningAlgorithm.init(rawValue:))
        self.signingInput = Array(bytes[..<dots[1]])
        self.signature = signature
    }

    /// Checks the signature with `key`. The token's `alg` must name the key's algorithm: the
    /// algorithm is never taken from the token alone (no `none`, no RS/ES confusion).
    public func verify(with key: VerifyingKey) throws(CryptoError) {
        guard let algorithm else {
            let named = header["alg"]?.stringValue ?? "none given"
            throw CryptoError(.unsupportedAlgorithm, "unsupported alg \(named)")
        }
        guard algorithm == key.algorithm else {
            throw CryptoError(.algorithmMismatch, "the token is \(algorithm.rawValue) but the key verifies \(key.algorithm.rawValue)")
        }
        guard key.verify(signature: signature, message: signingInput) else {
            throw CryptoError(.invalidSignature, "the signature does not verify")
        }
    }

    /// A string header member (`kid`, `typ`).
    public func headerString(_ name: String) -> String? { header[name]?.stringValue }

    /// A string claim (`iss`, `aud`, `scope`).
    public func claimString(_ name: String) -> String? { claims[name]?.stringValue }

    /// An integral numeric claim (`iat`, `exp`, `nbf`).
    public func claimInt64(_ name: String) -> Int64? { claims[name]?.numberValue?.int64Value }
}
