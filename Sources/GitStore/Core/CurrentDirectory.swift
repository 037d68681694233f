import Foundation

/// The current folder's absolute path, however long: Foundation's `currentDirectoryPath` (and a
/// `URL(fileURLWithPath:)` of a relative path, which uses it) gives `/` past 1,024 bytes, so a
/// relative path given in a deep folder named a place under `/`. Falls back to `$PWD` only when
/// the folder cannot be read (removed, or above it unreadable), as a shell would.
public func currentDirectory() -> String {
    if let buffer = getcwd(nil, 0) {
        defer { free(buffer) }
        return String(cString: buffer)
    }
    return ProcessInfo.processInfo.environment["PWD"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? "."
}
