import Foundation

/// Writes all of `bytes` to `descriptor`, going on after short writes and interruptions (EINTR).
/// False on an error, which `errno` then names.
func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
    writeAll(descriptor, [bytes])
}

/// Writes `buffers` in order with `writev` (at most 1,024, Linux's `IOV_MAX`, at a time), going
/// on after short writes and interruptions (EINTR). False on an error, which `errno` then names.
func writeAll(_ descriptor: Int32, _ buffers: [UnsafeRawBufferPointer]) -> Bool {
    var vectors = buffers.filter { !$0.isEmpty }.map { iovec(iov_base: UnsafeMutableRawPointer(mutating: $0.baseAddress), iov_len: $0.count) }
    var first = 0
    while first < vectors.count {
        let count = vectors.withUnsafeBufferPointer { all in
            writev(descriptor, all.baseAddress! + first, Int32(min(1024, vectors.count - first)))
        }
        if count < 0, errno == EINTR { continue }
        guard count > 0 else { return false }
        skipWritten(count, in: &vectors, from: &first)
    }
    return true
}

/// Moves `first` past the `count` bytes a `writev` of `vectors[first...]` wrote: past the vectors
/// written whole, and into the one written in part (which is cut to what is left of it).
func skipWritten(_ count: Int, in vectors: inout [iovec], from first: inout Int) {
    var left = count
    while left > 0, first < vectors.count, left >= vectors[first].iov_len {
        left -= vectors[first].iov_len
        first += 1
    }
    if left > 0 {
        vectors[first].iov_base += left
        vectors[first].iov_len -= left
    }
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
