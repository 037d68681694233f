import Foundation

/// A fresh temporary folder for one test, removed afterwards.
public func withScratch<R>(_ body: (String) async throws -> R) async rethrows -> R {
    let path = NSTemporaryDirectory() + "tidemark-test-" + UUID().uuidString
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try await body(path)
}

/// Runs `git` (tests only: to prove interoperability) and returns its stdout; fails on non-zero exit.
@discardableResult
public func git(_ arguments: [String], in directory: String) throws -> String {
    let out = directory + "/../git-out-" + UUID().uuidString
    let err = out + ".err"
    defer { try? FileManager.default.removeItem(atPath: out); try? FileManager.default.removeItem(atPath: err) }
    let child = try SpawnedProcess("git", arguments, in: directory, environment: ProcessInfo.processInfo.environment,
                                   stdout: out, stderr: err)
    let exit = child.wait()
    let text = String(decoding: FileManager.default.contents(atPath: out) ?? Data(), as: UTF8.self)
    if exit.status != 0 || exit.signalled {
        let message = String(decoding: FileManager.default.contents(atPath: err) ?? Data(), as: UTF8.self)
        struct GitFailed: Error, CustomStringConvertible { let description: String }
        throw GitFailed(description: "git \(arguments.joined(separator: " ")) exited \(exit.status): \(message)")
    }
    return text
}
