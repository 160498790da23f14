extension Substring {
    /// The text cut at every `separator` byte (an ASCII character), empty pieces kept. Works on the UTF-8
    /// bytes: `split(separator:)` on Characters runs grapheme breaking, which showed in the per-request
    /// profile (ARNs, the Authorization header, credential scopes).
    package func cut(at separator: UInt8) -> [Substring] {
        // Counted first, so the pieces are one allocation (a growing array of positions was several).
        var copy = self
        return copy.withUTF8 { bytes in
            var count = 1
            for byte in bytes where byte == separator { count += 1 }
            var pieces: [Substring] = []
            pieces.reserveCapacity(count)
            var start = startIndex
            var offset = 0
            for i in 0..<bytes.count where bytes[i] == separator {
                let end = utf8.index(start, offsetBy: i - offset)
                pieces.append(self[start..<end])
                start = utf8.index(after: end)
                offset = i + 1
            }
            pieces.append(self[start...])
            return pieces
        }
    }

    /// Byte equality with `other` (no Unicode normalisation: for ASCII tokens such as header field names,
    /// where `==` between a Substring and a String took String's slow comparison path).
    /// Compared on the contiguous bytes: `UTF8View.elementsEqual` indexes both views byte by byte through
    /// generic index calls, several hundred instructions even for a short token.
    package func hasBytes(_ other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        var mine = self, theirs = other
        return mine.withUTF8 { a in theirs.withUTF8 { b in a.elementsEqual(b) } }
    }

    /// Leading and trailing spaces and tabs removed (what `trimmingCharacters(in: .whitespaces)` does for header
    /// values, without Foundation's NSString bridging on every request).
    package func trimmingSpaces() -> Substring {
        var text = self
        while let first = text.utf8.first, first == 0x20 || first == 0x09 { text = text.dropFirst() }
        while let last = text.utf8.last, last == 0x20 || last == 0x09 { text = text.dropLast() }
        return text
    }
}
