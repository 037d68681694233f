import Foundation
import Testing
import TidemarkFixtures

/// Runs `tidemark` and keeps every run's output, so a test can prove a secret never showed up.
final class Transcript {
    let environment: [String: String]
    private(set) var outputs: [String] = []

    init(environment: [String: String]) { self.environment = environment }

    /// Runs `tidemark` in `directory` with the credentials environment.
    func tidemark(_ arguments: [String], in directory: String) async throws -> CLI.Result {
        let result = try await CLI.tidemark(arguments, in: directory, environment: environment)
        outputs += [result.stdout, result.stderr]
        return result
    }

    /// `status --porcelain` as a set of lines.
    func porcelain(in directory: String) async throws -> Set<String> {
        let result = try await tidemark(["status", "--porcelain"], in: directory)
        #expect(result.status == 0, "\(result.stderr)")
        return Set(result.stdout.split(separator: "\n").map(String.init))
    }

    /// `fetch --json`, parsed; nil when the output is not a JSON object.
    func fetchJSON(in directory: String, _ extra: [String] = []) async throws -> (CLI.Result, [String: Any]?) {
        let result = try await tidemark(["fetch", "--json"] + extra, in: directory)
        let report = try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        return (result, report)
    }
}

/// Calls the fixture's admin API over HTTP (`/_admin/<path>`) and returns its JSON answer.
@discardableResult
func admin(_ server: FixtureServer, _ path: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> [String: Any] {
    let result = try await CLI.run("/usr/bin/curl", ["-sS", "--max-time", "30", "-X", "POST", "\(server.baseURL)/_admin/\(path)"],
                             in: NSTemporaryDirectory())
    #expect(result.status == 0, "admin \(path): \(result.stderr)", sourceLocation: sourceLocation)
    let object = try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
    #expect(object?["error"] == nil, "admin \(path): \(result.stdout)", sourceLocation: sourceLocation)
    return object ?? [:]
}

/// The id an admin `create` returned.
func createdID(_ answer: [String: Any]) -> String {
    (answer["id"] as? String) ?? (answer["id"] as? Int).map(String.init) ?? "?"
}

/// Requests the fixture received, as `path` → count.
func requestsByPath(_ server: FixtureServer) -> [String: Int] {
    server.requests.reduce(into: [:]) { $0[$1.path, default: 0] += 1 }
}

/// The `Tidemark-Watermark` trailer recorded for `collection` in the message of `revision`.
func watermark(_ collection: String, at revision: String, in mirror: String) async throws -> String? {
    let message = try await CLI.git(["log", "-1", "--format=%B", revision], in: mirror)
    let lines = message.split(separator: "\n").map(String.init)
    guard let index = lines.firstIndex(of: "Tidemark-Collection: \(collection)"), index + 1 < lines.count,
          lines[index + 1].hasPrefix("Tidemark-Watermark: ")
    else { return nil }
    return String(lines[index + 1].dropFirst("Tidemark-Watermark: ".count))
}

/// Fails when any of `secrets` occurs in the repository's objects (as git prints them), in any
/// file under `.git/`, or in any output the transcript kept.
func expectNoSecrets(_ secrets: [String], mirror: String, transcript: Transcript,
                     sourceLocation: SourceLocation = #_sourceLocation) async throws {
    let objects = try await CLI.run("/usr/bin/git", ["cat-file", "--batch-all-objects", "--batch"], in: mirror)
    #expect(objects.status == 0 && !objects.stdout.isEmpty, sourceLocation: sourceLocation)
    var files: [String] = []
    if let walker = FileManager.default.enumerator(atPath: mirror + "/.git") {
        for case let relative as String in walker {
            var isDirectory: ObjCBool = false
            let path = mirror + "/.git/" + relative
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
                files.append(path)
            }
        }
    }
    #expect(files.contains(mirror + "/.git/config"), sourceLocation: sourceLocation)
    for secret in secrets {
        let bytes = Data(secret.utf8)
        #expect(!objects.stdout.contains(secret), "secret in git objects", sourceLocation: sourceLocation)
        for file in files {
            let contents = FileManager.default.contents(atPath: file) ?? Data()
            #expect(contents.range(of: bytes) == nil, "secret in \(file)", sourceLocation: sourceLocation)
        }
        for (index, output) in transcript.outputs.enumerated() {
            #expect(!output.contains(secret), "secret in output #\(index): \(output.prefix(300))", sourceLocation: sourceLocation)
        }
    }
}
