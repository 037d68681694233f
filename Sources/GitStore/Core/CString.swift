import CLibGit2
import Foundation

/// Runs `body` with C strings for `strings`, freed afterwards.
func withCStrings<R>(_ strings: [String], _ body: ([UnsafePointer<CChar>]) throws(GitError) -> R) throws(GitError) -> R {
    let copies: [UnsafeMutablePointer<CChar>] = strings.map { strdup($0)! }
    defer { copies.forEach { free($0) } }
    return try body(copies.map { UnsafePointer($0) })
}

/// Runs `body` with a `git_strarray` holding `strings` (empty array when `strings` is empty).
func withStrArray<R>(_ strings: [String], _ body: (inout git_strarray) throws(GitError) -> R) throws(GitError) -> R {
    let copies: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    var mutableCopies = copies
    return try mutableCopies.withUnsafeMutableBufferPointer { (buffer) throws(GitError) -> R in
        var array = git_strarray(strings: buffer.baseAddress, count: buffer.count)
        return try body(&array)
    }
}

/// Copies a `git_buf` into a String and disposes it.
func takeString(_ buffer: inout git_buf) -> String {
    defer { git_buf_dispose(&buffer) }
    guard let pointer = buffer.ptr else { return "" }
    return String(decoding: UnsafeRawBufferPointer(start: pointer, count: buffer.size), as: UTF8.self)
}
