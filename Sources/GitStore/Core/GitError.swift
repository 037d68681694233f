import CLibGit2
import Foundation

/// An error reported by libgit2, with the operation that failed.
///
/// Match on codes in `catch` clauses: `catch let error as GitError where error.code == .locked`.
public struct GitError: Error, Sendable, CustomStringConvertible {
    /// A libgit2 error code (`git_error_code`), kept as its raw value so codes newer than the
    /// linked libgit2 still round-trip.
    public struct Code: RawRepresentable, Hashable, Sendable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }

        public static let generic = Code(rawValue: -1)
        public static let notFound = Code(rawValue: -3)
        public static let exists = Code(rawValue: -4)
        public static let ambiguous = Code(rawValue: -5)
        public static let unbornBranch = Code(rawValue: -9)
        public static let locked = Code(rawValue: -14)
        public static let modified = Code(rawValue: -15)
        public static let conflict = Code(rawValue: -13)
        public static let invalidSpec = Code(rawValue: -12)
        public static let owner = Code(rawValue: -36)
        /// Not a libgit2 code: a Swift error thrown inside a callback.
        public static let user = Code(rawValue: -7)
    }

    public let code: Code
    /// libgit2's error class (`git_error_t`), 0 when libgit2 gave none.
    public let errorClass: Int32
    /// libgit2's message, or a description of the failed operation when it gave none.
    public let message: String
    /// The libgit2 function that failed.
    public let operation: String
    /// The paths the error is about, when libgit2 named them: a checkout's conflicts.
    public var paths: [String] = []

    public init(code: Code, errorClass: Int32 = 0, message: String, operation: String) {
        self.code = code
        self.errorClass = errorClass
        self.message = message
        self.operation = operation
    }

    public var description: String { message }

    /// True when the object store is damaged: an object that a ref or tree names is missing, or
    /// its bytes do not inflate or parse (an empty loose object after a crash, a flipped byte).
    public var damagedObjectStore: Bool {
        if errorClass == Int32(GIT_ERROR_ZLIB.rawValue) { return true }
        if errorClass == Int32(GIT_ERROR_ODB.rawValue) {
            return ["object not found", "failed to parse", "corrupt", "invalid", "inflat"].contains { message.contains($0) }
        }
        return errorClass == Int32(GIT_ERROR_OBJECT.rawValue)
            && ["failed to parse loose object", "does not match the type", "corrupt"].contains { message.contains($0) }
    }

    /// True when the index file is damaged (truncated, bytes changed), as opposed to locked or missing.
    public var damagedIndex: Bool {
        errorClass == Int32(GIT_ERROR_INDEX.rawValue)
            && ["invalid data in index", "corrupt", "checksum", "index file"].contains { message.contains($0) }
    }

    /// Reads `git_error_last()` right after a failing call. Tolerates NULL (libgit2 < 1.8).
    static func last(_ rc: Int32, operation: String) -> GitError {
        if let error = git_error_last(), let text = error.pointee.message {
            return GitError(code: Code(rawValue: rc), errorClass: error.pointee.klass,
                            message: String(cString: text), operation: operation)
        }
        return GitError(code: Code(rawValue: rc), message: "\(operation) failed (error \(rc))", operation: operation)
    }
}

/// Throws the last libgit2 error when `rc < 0`; returns `rc` otherwise (some calls return counts).
@discardableResult
func check(_ rc: Int32, _ operation: @autoclosure () -> String) throws(GitError) -> Int32 {
    if rc < 0 { throw GitError.last(rc, operation: operation()) }
    return rc
}

/// ``check(_:_:)`` for a call that writes files and may fail without setting a libgit2 error
/// (libgit2 1.5 writing the index on a full disk), leaving one set earlier, even within the same
/// call (a pack lookup that missed: "object not found"). The error state and `errno` are cleared
/// first; a failure whose `errno` is a write failure (a full disk or quota, an I/O error, a
/// read-only file system, a file too large) names that cause, else libgit2's error.
func checkCall(_ operation: String, _ call: () -> Int32) throws(GitError) {
    git_error_clear()
    errno = 0
    let rc = call()
    guard rc < 0 else { return }
    let cause = errno
    if [ENOSPC, EDQUOT, EIO, EROFS, EFBIG].contains(cause) || (git_error_last()?.pointee.message == nil && cause != 0) {
        throw GitError(code: GitError.Code(rawValue: rc), message: "\(operation) failed: \(String(cString: strerror(cause)))",
                       operation: operation)
    }
    throw GitError.last(rc, operation: operation)
}

/// Calls a libgit2 function that writes objects, again (at most twice more) when it failed because
/// a folder vanished under it: `git gc` (its `prune-packed`) removes empty `objects/xx` folders,
/// and one can go between libgit2's mkdir and its rename of a new loose object into it, as git's
/// own object writer allows for. Any other failure throws at once.
func checkObjectWrite(_ operation: String, _ call: () -> Int32) throws(GitError) {
    var attempt = 0
    while true {
        attempt += 1
        git_error_clear()
        errno = 0
        let rc = call()
        guard rc < 0 else { return }
        let message = git_error_last().map { String(cString: $0.pointee.message) } ?? ""
        if attempt < 3, errno == ENOENT || message.hasSuffix("No such file or directory") { continue }
        throw GitError.last(rc, operation: operation)
    }
}

/// Calls a libgit2 function that fills an out-pointer; throws on error or a nil result.
func makeHandle(_ operation: String, _ body: (inout OpaquePointer?) -> Int32) throws(GitError) -> OpaquePointer {
    var pointer: OpaquePointer?
    let rc = body(&pointer)
    try check(rc, operation)
    guard let pointer else {
        throw GitError(code: .generic, message: "\(operation) returned no object", operation: operation)
    }
    return pointer
}
