import Foundation
import Testing

/// The JSON examples of Documentation/OutputFormats.md, by section heading (`tidemark sync --json`).
private func documentedExamples() throws -> [String: [Any]] {
    let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Documentation/OutputFormats.md").path
    let text = try String(contentsOfFile: path, encoding: .utf8)
    var examples: [String: [Any]] = [:]
    var section = ""
    var block: [String]?
    for line in text.components(separatedBy: "\n") {
        if line.hasPrefix("## ") {
            section = String(line.dropFirst(3)).trimmingCharacters(in: CharacterSet(charactersIn: "` "))
        } else if line == "```json" {
            block = []
        } else if line == "```", let lines = block {
            let json = try JSONSerialization.jsonObject(with: Data(lines.joined(separator: "\n").utf8))
            examples[section, default: []].append(json)
            block = nil
        } else if block != nil {
            block!.append(line)
        }
    }
    return examples
}

/// The section's prose and examples, for "is this field documented".
private func sectionText(_ heading: String) throws -> String {
    let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Documentation/OutputFormats.md").path
    let text = try String(contentsOfFile: path, encoding: .utf8)
    let parts = text.components(separatedBy: "\n## ")
    return parts.first { $0.hasPrefix("`\(heading)`") } ?? ""
}

private func keys(_ json: Any) -> Set<String> {
    if let object = json as? [String: Any] { return Set(object.keys) }
    if let array = json as? [[String: Any]], let first = array.first { return Set(first.keys) }
    return []
}

@Suite("End to end: --json outputs match Documentation/OutputFormats.md")
struct OutputFormatTests {
    @Test func everyJSONOutputParsesAndHasTheDocumentedFields() async throws {
        let examples = try documentedExamples()
        try await withScratch { root in
            let up = root + "/up"
            try FileManager.default.createDirectory(atPath: up, withIntermediateDirectories: true)
            for id in ["a", "b", "c"] { try writeItem(up, id, lastModified: "2026-01-01T00:00:00Z") }
            var outputs: [(heading: String, example: Int, json: Any)] = []
            func run(_ heading: String, example: Int = 0, _ arguments: [String], in directory: String) async throws {
                let result = try await CLI.tidemark(arguments, in: directory)
                #expect(result.status == 0, "\(arguments): \(result.stderr)")
                let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8))
                outputs.append((heading, example, json))
            }
            try await run("tidemark clone --json", ["clone", "dir:up", "m", "--json"], in: root)
            let mirror = root + "/m"
            try writeItem(up, "b", lastModified: "2026-02-01T00:00:00Z")
            try FileManager.default.removeItem(atPath: up + "/c.json")
            try writeItem(up, "d", lastModified: "2026-02-01T00:00:00Z")
            try await run("tidemark fetch --json", ["fetch", "--json"], in: mirror)
            try await run("tidemark status --json", ["status", "--json"], in: mirror)
            try await run("tidemark diff --stat --json", ["diff", "--stat", "--json"], in: mirror)
            try await run("tidemark sync --json", example: 1, ["sync", "--dry-run", "--json"], in: mirror)
            try await run("tidemark sync --json", ["sync", "--json"], in: mirror)
            try await run("tidemark log --json", ["log", "--json"], in: mirror)
            try await run("tidemark rollback --json", ["rollback", "HEAD~1", "--json"], in: mirror)
            try await run("tidemark config --json", ["config", "--json"], in: mirror)

            var checked: Set<String> = []
            for (heading, index, json) in outputs {
                let documented = try #require(examples[heading], "no example for \(heading)")
                checked.insert(heading)
                let example = documented[min(index, documented.count - 1)]
                let actual = keys(json)
                #expect(!actual.isEmpty)
                // Every documented field exists in the real output...
                #expect(keys(example).subtracting(actual).isEmpty, "\(heading): missing \(keys(example).subtracting(actual))")
                // ...and every real field is documented (in the example or the section's text).
                let text = try sectionText(heading)
                let undocumented = actual.filter { !keys(example).contains($0) && !text.contains("`\($0)`") }
                #expect(undocumented.isEmpty, "\(heading): undocumented \(undocumented)")
            }
            #expect(checked == Set(examples.keys), "examples without a check: \(Set(examples.keys).subtracting(checked))")
        }
    }
}
