import Foundation
import GitStore

/// git lock files that tidemark itself may leave behind when it is killed (SIGKILL gives libgit2
/// no chance to remove them). Before writing a ref or the index, a run notes it in
/// `.git/tidemark/locks` (`ref <name> <new id> <pid>` or `index - - <pid>`); the next run, holding
/// the run lock, removes a lock file only when that note names it, its pid is gone and, for a
/// ref, the lock holds nothing or the id that run was writing. Any other lock file is reported by
/// name and left alone (``MirrorError/gitLocked(_:)``).
extension Mirror {
    static let locksNote = "locks"

    /// Runs `body`, noting first which git lock file it may create.
    func withLockNote<R>(ref name: String? = nil, target: ObjectID? = nil,
                         _ body: () throws(MirrorError) -> R) throws(MirrorError) -> R {
        let note = name.map { "ref \($0) \(target?.hex ?? "-") \(getpid())\n" } ?? "index - - \(getpid())\n"
        try writeState(Mirror.locksNote, note)
        // Also after an error: libgit2 then removed its own lock, or the lock was someone else's.
        defer { removeState(Mirror.locksNote) }
        return try body()
    }

    /// Removes the lock file a killed tidemark run left, as described by its note.
    func removeOwnStaleGitLock() {
        guard let note = readState(Mirror.locksNote) else { return }
        defer { removeState(Mirror.locksNote) }
        let fields = note.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init)
        guard fields.count == 4, let pid = Int32(fields[3]), pid != getpid(),
              kill(pid, 0) != 0, errno == ESRCH else { return }
        let path = gitDirectory + (fields[0] == "ref" ? fields[1] + ".lock" : "index.lock")
        guard let data = FileManager.default.contents(atPath: path) else { return }
        if fields[0] == "ref" {
            let content = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard content.isEmpty || content == fields[2] else { return }
        }
        try? FileManager.default.removeItem(atPath: path)
    }
}
