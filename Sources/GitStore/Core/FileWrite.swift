import Foundation

/// Writes all of `bytes` to `descriptor`, going on after short writes and interruptions (EINTR).
/// False on an error, which `errno` then names.
func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
    var offset = 0
    while offset < bytes.count {
        let count = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
        if count < 0, errno == EINTR { continue }
        guard count > 0 else { return false }
        offset += count
    }
    return true
}

/// Fills `buffer` from `descriptor`, going on after short reads and interruptions (EINTR).
/// False on an error (which `errno` then names) or when the file ends first.
func readAll(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Bool {
    var offset = 0
    while offset < buffer.count {
        let count = Glibc.read(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
        if count < 0, errno == EINTR { continue }
        guard count > 0 else { return false }
        offset += count
    }
    return true
}

/// The first bytes (at most `limit`) of the file at `path`, not following a symbolic link; nil
/// when it cannot be opened or read, or is empty. For small marker files (locks, keeps).
func leadingBytes(of path: String, limit: Int) -> [UInt8]? {
    let descriptor = Glibc.open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
    guard descriptor >= 0 else { return nil }
    defer { close(descriptor) }
    var buffer = [UInt8](repeating: 0, count: limit)
    let count = read(descriptor, &buffer, limit)
    return count > 0 ? Array(buffer[..<count]) : nil
}
