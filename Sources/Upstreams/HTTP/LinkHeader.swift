/// Parsing of the `Link` header (RFC 8288), as used for paging (`rel="next"`).
enum LinkHeader {
    /// The target of the first link whose `rel` contains `relation`, e.g. `next`.
    static func target(in values: [String], relation: String) -> String? {
        for value in values {
            for link in splitLinks(value) {
                // The target is all of `<...>` (a URI may hold `;` and `,`); the parameters follow.
                let trimmed = link.trimmingCharacters(in: .whitespaces)
                guard trimmed.hasPrefix("<"), let close = trimmed.firstIndex(of: ">") else { continue }
                let target = String(trimmed[trimmed.index(after: trimmed.startIndex)..<close])
                for parameter in splitOutsideQuotes(trimmed[trimmed.index(after: close)...], at: ";") {
                    let pair = parameter.split(separator: "=", maxSplits: 1).map {
                        $0.trimmingCharacters(in: .whitespaces)
                    }
                    guard pair.count == 2, pair[0].lowercased() == "rel" else { continue }
                    let rels = pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
                        .split(separator: " ").map { $0.lowercased() }
                    if rels.contains(relation.lowercased()) { return target }
                }
            }
        }
        return nil
    }

    /// The parts of a link's parameter list between `separator`s outside quoted strings, trimmed.
    private static func splitOutsideQuotes(_ text: Substring, at separator: Character) -> [String] {
        var parts: [String] = []
        var current = ""
        var inQuote = false
        for character in text {
            if character == "\"" { inQuote.toggle() }
            if character == separator, !inQuote {
                parts.append(current.trimmingCharacters(in: .whitespaces))
                current = ""
            } else {
                current.append(character)
            }
        }
        parts.append(current.trimmingCharacters(in: .whitespaces))
        return parts.filter { !$0.isEmpty }
    }

    /// Splits a header value at the commas that separate links (not those inside `<...>` or quotes).
    private static func splitLinks(_ value: String) -> [String] {
        var result: [String] = []
        var current = ""
        var inAngle = false, inQuote = false
        for character in value {
            switch character {
            case "<" where !inQuote: inAngle = true
            case ">" where !inQuote: inAngle = false
            case "\"" where !inAngle: inQuote.toggle()
            case "," where !inAngle && !inQuote:
                result.append(current)
                current = ""
                continue
            default: break
            }
            current.append(character)
        }
        if !current.isEmpty { result.append(current) }
        return result
    }
}

import Foundation
