extension Substring {
    /// The text cut at every `separator` byte (an ASCII character), empty pieces kept. Works on the UTF-8
    /// bytes: `split(separator:)` on Characters runs grapheme breaking, which showed in the per-request
    /// profile (ARNs, the Authorization header, credential scopes).
    func cut(at separator: UInt8) -> [Substring] {
        var pieces: [Substring] = []
        var start = startIndex
        var index = utf8.startIndex
        while index != utf8.endIndex {
            if utf8[index] == separator {
                pieces.append(self[start..<index])
                start = utf8.index(after: index)
            }
            index = utf8.index(after: index)
        }
        pieces.append(self[start...])
        return pieces
    }
}
