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
