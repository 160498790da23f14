/// Writes families in the Prometheus text exposition format 0.0.4: `# HELP` and `# TYPE` once per family, then
/// one line per sample. Label values escape `\`, `"` and newline; HELP text escapes `\` and newline.
/// A counter's samples and its HELP and TYPE lines all carry the `_total` suffix: in format 0.0.4 the TYPE line
/// names the sample (`prometheus_client`'s parser, given `# TYPE x counter` and a sample `x_total`, reads the
/// sample as a second, untyped family).
public struct ExpositionWriter {
    public private(set) var text = ""

    public init() {}

    /// The content type of the exposition.
    public static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    public mutating func write(_ family: MetricSnapshot) {
        let base = family.type == .counter && family.name.hasSuffix("_total") ? String(family.name.dropLast(6)) : family.name
        let described = family.type == .counter ? base + "_total" : base
        text += "# HELP \(described) \(Self.escapeHelp(family.help))\n"
        text += "# TYPE \(described) \(family.type.rawValue)\n"
        for sample in family.samples {
            let suffix = family.type == .counter && sample.suffix.isEmpty ? "_total" : sample.suffix
            text += base
            text += suffix
            if !sample.labels.isEmpty {
                text += "{"
                var first = true
                for (name, value) in sample.labels {
                    if !first { text += "," }
                    first = false
                    text += name
                    text += "=\""
                    text += Self.escapeLabelValue(value)
                    text += "\""
                }
                text += "}"
            }
            text += " "
            text += Self.format(sample.value)
            text += "\n"
        }
    }

    static func escapeLabelValue(_ value: String) -> String {
        guard value.utf8.contains(where: { $0 == 0x5C || $0 == 0x22 || $0 == 0x0A }) else { return value }
        var out = ""
        for character in value.unicodeScalars {
            switch character {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }

    static func escapeHelp(_ help: String) -> String {
        var out = ""
        for character in help.unicodeScalars {
            switch character {
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default: out.unicodeScalars.append(character)
            }
        }
        return out
    }

    /// Integers without a fraction (`12`, not `12.0`), `+Inf`, `-Inf`, `NaN`, and other values in Swift's
    /// shortest round-tripping form (`0.005`, `1e-06`).
    static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value == .infinity { return "+Inf" }
        if value == -.infinity { return "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return value.description
    }
}
