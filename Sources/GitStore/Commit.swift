import CLibGit2
import Foundation

/// Who made a commit and when.
public struct Signature: Sendable, Equatable {
    public var name: String
    public var email: String
    /// Seconds since 1970-01-01T00:00:00Z.
    public var time: Int64
    /// Offset from UTC in minutes.
    public var offsetMinutes: Int32

    public init(name: String, email: String, time: Int64 = Int64(Date().timeIntervalSince1970), offsetMinutes: Int32 = 0) {
        self.name = name
        self.email = email
        self.time = time
        self.offsetMinutes = offsetMinutes
    }

    /// A date as `GIT_AUTHOR_DATE` gives it, in the forms git reads: its own (`@1700000000
    /// +0100`, `1700000000 +0100`, `@1700000000`), RFC 2822 (`Thu, 07 Apr 2005 22:13:13 +0200`)
    /// and ISO 8601 (`2005-04-07T22:13:13+02:00`, `2005-04-07 22:13:13 +0200`, fractions of a
    /// second dropped; no zone: local time). Nil for anything else.
    public static func parseDate(_ text: String) -> (time: Int64, offsetMinutes: Int32)? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let parts = trimmed.split(separator: " ")
        func zone(_ text: Substring) -> Int32? {
            if text == "Z" { return 0 }
            let digits = text.dropFirst().filter { $0 != ":" }
            guard let sign = text.first, "+-".contains(sign), digits.count == 4, let value = Int32(digits) else { return nil }
            let minutes = value / 100 * 60 + value % 100
            return sign == "-" ? -minutes : minutes
        }
        if parts.count <= 2, let seconds = Int64(parts[0].hasPrefix("@") ? parts[0].dropFirst() : parts[0]),
           parts[0].hasPrefix("@") || parts.count == 2 {
            guard parts.count == 2 else { return (seconds, 0) }
            return zone(parts[1]).map { (seconds, $0) }
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        // Fractions of a second go (git keeps whole seconds); the zone is read from the text.
        let whole = trimmed.replacingOccurrences(of: #"(:\d\d)\.\d+"#, with: "$1", options: .regularExpression)
        for format in ["EEE, dd MMM yyyy HH:mm:ss Z", "dd MMM yyyy HH:mm:ss Z", "yyyy-MM-dd HH:mm:ss Z", "yyyy-MM-dd'T'HH:mm:ssXXXXX",
                       "yyyy-MM-dd'T'HH:mm:ssZ", "yyyy-MM-dd HH:mm:ss", "yyyy-MM-dd'T'HH:mm:ss"] {
            formatter.dateFormat = format
            formatter.timeZone = format.contains("Z") || format.contains("X") ? TimeZone(identifier: "UTC") : TimeZone.current
            guard let date = formatter.date(from: whole) else { continue }
            var offset = Int32(TimeZone.current.secondsFromGMT(for: date) / 60)
            if let written = whole.range(of: #"(Z|[+-]\d\d:?\d\d)$"#, options: .regularExpression) {
                offset = zone(whole[written]) ?? 0
            }
            return (Int64(date.timeIntervalSince1970), offset)
        }
        return nil
    }

    init(_ raw: UnsafePointer<git_signature>) {
        name = String(cString: raw.pointee.name)
        email = String(cString: raw.pointee.email)
        time = raw.pointee.when.time
        offsetMinutes = raw.pointee.when.offset
    }
}

/// A commit, copied out of libgit2.
public struct Commit: Sendable, Equatable {
    public let id: ObjectID
    public let tree: ObjectID
    public let parents: [ObjectID]
    public let message: String
    public let author: Signature
    public let committer: Signature

    /// The first line of the message.
    public var summary: String { String(message.prefix(while: { $0 != "\n" })) }
}

extension Repository {
    /// Reads commit `id`.
    public func commit(_ id: ObjectID) throws(GitError) -> Commit {
        var oid = id.raw
        let commit = try makeHandle("git_commit_lookup") { git_commit_lookup(&$0, pointer, &oid) }
        defer { git_commit_free(commit) }
        let parents = (0..<git_commit_parentcount(commit)).compactMap { index in
            git_commit_parent_id(commit, index).map(ObjectID.init)
        }
        return Commit(
            id: id,
            tree: ObjectID(git_commit_tree_id(commit)),
            parents: parents,
            message: git_commit_message(commit).map { String(cString: $0) } ?? "",
            author: Signature(git_commit_author(commit)),
            committer: Signature(git_commit_committer(commit)))
    }

    /// Whether commit `id` descends from commit `ancestor` (`git merge-base --is-ancestor ancestor
    /// id`); false for the commit itself.
    public func isDescendant(_ id: ObjectID, of ancestor: ObjectID) throws(GitError) -> Bool {
        var commit = id.raw
        var base = ancestor.raw
        return try check(git_graph_descendant_of(pointer, &commit, &base), "git_graph_descendant_of") == 1
    }

    /// The best common ancestor of `one` and `other` (`git merge-base`), or nil when they share
    /// no history.
    public func mergeBase(_ one: ObjectID, _ other: ObjectID) throws(GitError) -> ObjectID? {
        var base = git_oid()
        var first = one.raw
        var second = other.raw
        let rc = git_merge_base(&base, pointer, &first, &second)
        if rc == GIT_ENOTFOUND.rawValue { return nil }
        try check(rc, "git_merge_base")
        return ObjectID(base)
    }

    /// Every best common ancestor of `one` and `other` (`git merge-base --all`: more than one
    /// after criss-cross merges); empty when they share no history.
    public func mergeBases(_ one: ObjectID, _ other: ObjectID) throws(GitError) -> [ObjectID] {
        var bases = git_oidarray()
        var first = one.raw
        var second = other.raw
        let rc = git_merge_bases(&bases, pointer, &first, &second)
        if rc == GIT_ENOTFOUND.rawValue { return [] }
        try check(rc, "git_merge_bases")
        defer { git_oidarray_dispose(&bases) }
        return (0..<bases.count).map { ObjectID(bases.ids[$0]) }
    }

    /// Writes a commit object (no ref is moved) and returns its id.
    public func createCommit(tree: ObjectID, parents: [ObjectID], message: String,
                             author: Signature, committer: Signature? = nil) throws(GitError) -> ObjectID {
        var treeID = tree.raw
        let treeObject = try makeHandle("git_tree_lookup") { git_tree_lookup(&$0, pointer, &treeID) }
        defer { git_tree_free(treeObject) }
        var parentObjects: [OpaquePointer?] = []
        defer { parentObjects.forEach { git_commit_free($0) } }
        for parent in parents {
            var oid = parent.raw
            parentObjects.append(try makeHandle("git_commit_lookup") { git_commit_lookup(&$0, pointer, &oid) })
        }
        let authorSignature = try makeSignature(author)
        defer { git_signature_free(authorSignature) }
        let committerSignature = try makeSignature(committer ?? author)
        defer { git_signature_free(committerSignature) }
        var result = git_oid()
        try checkObjectWrite("git_commit_create") {
            parentObjects.withUnsafeMutableBufferPointer { buffer in
                // No `encoding` header: UTF-8 is git's default, and git writes none for it.
                git_commit_create(&result, pointer, nil, authorSignature, committerSignature, nil,
                                  message, treeObject, buffer.count, buffer.count == 0 ? nil : buffer.baseAddress)
            }
        }
        return ObjectID(result)
    }

    private func makeSignature(_ signature: Signature) throws(GitError) -> UnsafeMutablePointer<git_signature> {
        var raw: UnsafeMutablePointer<git_signature>?
        try check(git_signature_new(&raw, signature.name, signature.email, signature.time, signature.offsetMinutes),
                  "git_signature_new")
        return raw!
    }

    /// The signature from `user.name`/`user.email` in git config, else `fallbackName`/`fallbackEmail`.
    public func defaultSignature(fallbackName: String, fallbackEmail: String) -> Signature {
        var raw: UnsafeMutablePointer<git_signature>?
        if git_signature_default(&raw, pointer) == 0, let raw {
            defer { git_signature_free(raw) }
            return Signature(UnsafePointer(raw))
        }
        return Signature(name: fallbackName, email: fallbackEmail)
    }

    /// Whose name a commit carries.
    public enum SignatureRole: String, Sendable { case author = "AUTHOR", committer = "COMMITTER" }

    /// ``defaultSignature(fallbackName:fallbackEmail:)`` with git's environment applied for `role`
    /// as git applies it: `GIT_AUTHOR_NAME`, `GIT_AUTHOR_EMAIL`, `GIT_AUTHOR_DATE` (or the
    /// `COMMITTER` ones). A date is read as ``Signature/parseDate(_:)`` reads it; another is
    /// ignored.
    public func signature(for role: SignatureRole, fallbackName: String, fallbackEmail: String,
                          environment: [String: String] = ProcessInfo.processInfo.environment) -> Signature {
        var signature = defaultSignature(fallbackName: fallbackName, fallbackEmail: fallbackEmail)
        if let name = environment["GIT_\(role.rawValue)_NAME"], !name.isEmpty { signature.name = name }
        if let email = environment["GIT_\(role.rawValue)_EMAIL"] { signature.email = email }
        if let date = environment["GIT_\(role.rawValue)_DATE"].flatMap(Signature.parseDate) {
            signature.time = date.time
            signature.offsetMinutes = date.offsetMinutes
        }
        return signature
    }
}
