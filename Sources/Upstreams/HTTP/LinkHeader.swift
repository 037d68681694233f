/// Parsing of the `Link` header (RFC 8288), as used for paging (`rel="next"`).
enum LinkHeader {
    /// The target of the first link whose `rel` contains `relation`, e.g. `next`.
    static func target(in values: [String], relation: String) -> String? {
        for value in values {
            for link in splitLinks(value) {
                let parts = link.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
                guard let first = parts.first, first.hasPrefix("<"), first.hasSuffix(">") else { continue }
                let target = String(first.dropFirst().dropLast())
                for parameter in parts.dropFirst() {
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
