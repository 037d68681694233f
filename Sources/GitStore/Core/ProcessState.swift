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

/// The current folder's path as bytes when they are not UTF-8 (``currentDirectory()`` shows such
/// bytes as U+FFFD, a path naming no folder); nil when they are, or it cannot be read.
public func currentDirectoryIfNotUTF8() -> [UInt8]? {
    guard let buffer = getcwd(nil, 0) else { return nil }
    defer { free(buffer) }
    guard String(validatingCString: buffer) == nil else { return nil }
    return Array(UnsafeRawBufferPointer(start: buffer, count: strlen(buffer)))
}

/// The process's file mode creation mask, read once (from `/proc/self/status`: `umask()` can
/// only be read by setting it, and another thread may create a file meanwhile); git's 022 when
/// it cannot be read.
public let processUmask: mode_t = {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
          let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Umask:") }),
          let mask = mode_t(line.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8) else { return 0o022 }
    return mask
}()
