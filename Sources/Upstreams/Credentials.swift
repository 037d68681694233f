import Foundation

/// A secret used to authenticate to an upstream.
public enum Credential: Sendable, Equatable {
    /// `Authorization: Bearer <token>`.
    case bearer(String)
    /// `Authorization: Basic base64(user:password)` (WordPress application passwords).
    case basic(user: String, password: String)

    /// The value of the `Authorization` header.
    public var authorizationHeader: String {
        switch self {
        case .bearer(let token): return "Bearer " + token
        case .basic(let user, let password): return "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
        }
    }

    /// Every form in which this secret could show up in text.
    var secrets: [String] {
        switch self {
        case .bearer(let token): return [token]
        case .basic(_, let password):
            return [password, String(authorizationHeader.dropFirst("Basic ".count))]
        }
    }
}

/// Where an upstream's credentials come from, as named by its options. Never holds a secret
/// until ``resolve()`` is called; then keeps it in memory only, and redacts it from any text.
///
/// Options (any one):
/// - `tokenEnv=VAR`: a bearer token read from the environment variable `VAR`.
/// - `tokenCommand=CMD`: a bearer token printed by `/bin/sh -c CMD` (trimmed stdout), like a git
///   credential helper. Fails after `commandTimeout` seconds (default 60: time to answer a
///   pinentry or password manager prompt).
/// - `basicEnv=USER_VAR:PASS_VAR`: HTTP Basic credentials from two environment variables.
public final class Credentials: @unchecked Sendable {
    enum Source: Equatable {
        case none
        case tokenEnv(String)
        case tokenCommand(String)
        case basicEnv(user: String, password: String)
    }

    let source: Source
    private let environment: [String: String]
    private let commandTimeout: Double
    private let lock = NSLock()
    private var resolved: Credential??  // nil: not yet resolved
    /// Credentials a renewal replaced: still redacted (a late message may quote one).
    private var replaced: [Credential] = []
    /// The `tokenCommand` run that renews a refused token, shared by the requests it refused.
    private var renewal: Task<Credential?, any Error>?
    private var lastRenewal: ContinuousClock.Instant?
    /// False from a renewal until the upstream accepts the token it gave.
    private var acceptedSinceRenewal = true
    /// The secrets' forms to redact, built once (redaction runs for every request of a verbose
    /// or progress-reporting run).
    private var redactions: Redactions?
    private var pending: Task<Credential?, any Error>?

    /// The options that name credentials; at most one is given.
    package static let optionKeys = ["tokenEnv", "tokenCommand", "basicEnv"]

    /// Reads the credential options from `options`.
    /// - Throws: ``UpstreamError/invalidConfiguration(_:)`` when more than one is given or
    ///   `tokenEnv` is not a variable name or `basicEnv` not `USER_VAR:PASS_VAR`.
    public init(
        options: [String: String], environment: [String: String] = ProcessInfo.processInfo.environment,
        commandTimeout: Double = 60
    ) throws {
        let given = Credentials.optionKeys.filter { options[$0] != nil }
        guard given.count <= 1 else {
            throw UpstreamError.invalidConfiguration(
                "give only one of the options \(given.joined(separator: ", ")) (they all name credentials)")
        }
        // The values are names, never shown in a message: a token pasted in their place (on the
        // command line or with `git config`) must not be echoed.
        if let name = options["tokenEnv"] {
            guard Credentials.isVariableName(name) else {
                throw UpstreamError.invalidConfiguration(
                    "option tokenEnv takes the name of an environment variable (letters, digits and _), and its value "
                    + "is not one; the token itself goes in that variable")
            }
            source = .tokenEnv(name)
        } else if let command = options["tokenCommand"] {
            guard !command.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw UpstreamError.invalidConfiguration("option tokenCommand needs a command")
            }
            source = .tokenCommand(command)
        } else if let pair = options["basicEnv"] {
            let parts = pair.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 2, parts.allSatisfy(Credentials.isVariableName) else {
                throw UpstreamError.invalidConfiguration(
                    "option basicEnv takes two environment variable names, USER_VAR:PASS_VAR, and its value is not "
                    + "that; the credentials themselves go in those variables")
            }
            source = .basicEnv(user: parts[0], password: parts[1])
        } else {
            source = .none
        }
        self.environment = environment
        self.commandTimeout = commandTimeout
    }

    /// True for an environment variable name: a letter or `_`, then letters, digits and `_`.
    public static func isVariableName(_ name: String) -> Bool {
        guard let first = name.first, !first.isNumber else { return false }
        return name.allSatisfy { $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) }
    }

    /// True for a variable name a message may repeat: capitals, digits and `_`, as environment
    /// variables are named (`DOCUSIGN_TOKEN`), and not like a token. A password pasted where the
    /// name goes (`Hunter2Hunter2`, a WordPress application password without its spaces) is not.
    public static func isShownVariableName(_ name: String) -> Bool {
        isVariableName(name) && !looksLikeToken(name) && !name.contains(where: \.isLowercase)
    }

    /// True for a variable name that may be a pasted token: long, with lower-case letters and
    /// digits (`ghp_...`, `glpat...`), or starting like a well-known token (`ghp_`, `sk_live_`),
    /// unlike the usual `DOCUSIGN_TOKEN`.
    public static func looksLikeToken(_ name: String) -> Bool {
        let prefixes = ["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "sk_live_", "sk_test_", "rk_live_", "rk_test_"]
        return (name.count > 24 && name.contains(where: \.isLowercase) && name.contains(where: \.isNumber))
            || prefixes.contains { name.hasPrefix($0) && name.count > $0.count + 8 }
    }

    /// True when `secret` holds a control character (a line break, DEL): a header cannot carry
    /// one, and the HTTP client's error would print the value.
    static func hasControlCharacter(_ secret: String) -> Bool {
        secret.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }
    }

    /// True when some credential option is configured.
    public var isConfigured: Bool { source != .none }

    /// Where the credential comes from, for a message (`from $DOCUSIGN_TOKEN`; a variable name
    /// that may be a pasted secret is not repeated, nor is a command).
    var origin: String {
        func variable(_ name: String) -> String { Credentials.isShownVariableName(name) ? "$" + name : "the variable given" }
        switch source {
        case .none: return "(none)"
        case .tokenEnv(let name): return "from " + variable(name) + " (tokenEnv)"
        case .tokenCommand: return "from tokenCommand's output"
        case .basicEnv(let user, let password): return "from " + variable(user) + " and " + variable(password) + " (basicEnv)"
        }
    }

    /// The credential, obtained once and then cached (a failure is cached too, so a failing
    /// `tokenCommand` runs once, not once per request); nil when none is configured.
    /// - Throws: ``UpstreamError/credentials(_:)`` naming the variable or the failing command
    ///   option, never the secret or the command's output.
    public func resolve() async throws -> Credential? {
        let task = lock.withLock { () -> Task<Credential?, any Error> in
            if let pending { return pending }
            let task = Task { try await self.obtain() }
            pending = task
            return task
        }
        let credential = try await task.value
        // A renewal that finished meanwhile set its own.
        lock.withLock { if resolved == nil { resolved = .some(credential) } }
        return credential
    }

    /// At most one `tokenCommand` run to renew a token in this long (a command that prints a
    /// new token the server refuses each time is not run for every request).
    static let renewalInterval: Duration = .seconds(60)

    /// The credential to send instead of `refused`, which the upstream refused (401): with a
    /// `tokenCommand`, the token it prints when run again (an access token that expired during a
    /// long run; the requests refused together share one run), or the one another request's
    /// renewal already got. Nil when there is none to try: credentials from the environment (a
    /// run cannot change them), a command that printed the same token, one run less than
    /// ``renewalInterval`` ago, or a renewed token the upstream never accepted (a 401 that is no
    /// expiry does not run a command that may prompt, again and again).
    /// - Throws: the command's failure (the token in use stays).
    public func renewed(after refused: Credential) async throws -> Credential? {
        guard case .tokenCommand = source else { return nil }
        let task = lock.withLock { () -> Task<Credential?, any Error>? in
            if let renewal { return renewal }
            if case .some(let current?) = resolved, current != refused { return Task { current } }
            guard acceptedSinceRenewal else { return nil }
            if let lastRenewal, ContinuousClock.now - lastRenewal < Credentials.renewalInterval { return nil }
            lastRenewal = .now
            let previous = pending
            let task = Task { () async throws -> Credential? in
                do {
                    let fresh = try await self.obtain()
                    self.lock.withLock {
                        if case .some(let current?) = self.resolved, current != fresh { self.replaced.append(current) }
                        self.resolved = .some(fresh)
                        self.redactions = nil
                        self.acceptedSinceRenewal = false
                        self.renewal = nil
                    }
                    return fresh
                } catch {
                    self.lock.withLock {
                        self.pending = previous
                        self.renewal = nil
                    }
                    throw error
                }
            }
            renewal = task
            pending = task
            return task
        }
        guard let task else { return nil }
        let fresh = try await task.value
        return fresh == refused ? nil : fresh
    }

    /// Notes that the upstream accepted `credential` (a request sent with it succeeded), which
    /// lets a later refusal of it renew it again.
    public func accepted(_ credential: Credential) {
        lock.withLock {
            if !acceptedSinceRenewal, case .some(let current?) = resolved, current == credential { acceptedSinceRenewal = true }
        }
    }

    private func obtain() async throws -> Credential? {
        switch source {
        case .none:
            return nil
        case .tokenEnv(let name):
            return .bearer(try variable(name, option: "tokenEnv"))
        case .basicEnv(let user, let password):
            return .basic(user: try variable(user, option: "basicEnv"), password: try variable(password, option: "basicEnv"))
        case .tokenCommand(let command):
            let timeout = commandTimeout
            let token = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<String, Error>) in
                DispatchQueue.global().async {
                    continuation.resume(with: Result { try TokenCommand.run(command, timeout: timeout) })
                }
            }
            return .bearer(token)
        }
    }

    /// Secrets shorter than this are redacted only where no letter or digit adjoins them: a
    /// placeholder token such as `token` or `a` starred the words and URLs around it
    /// (`tidemark.***Env`, `/rest***pi/`), garbling messages and showing which letters it was.
    static let wholeWordLength = 12

    /// `text` with every resolved secret (token, password, Basic header value) replaced by `***`;
    /// one shorter than ``wholeWordLength`` only where it stands alone.
    public func redact(_ text: String) -> String {
        // The credential and the forms built from it are read together: a renewal in between
        // would leave the new token out of them.
        let found = lock.withLock { () -> Redactions? in
            guard case .some(let credential?) = resolved else { return nil }
            if let redactions { return redactions }
            let built = Redactions((replaced + [credential]).flatMap(\.secrets).filter { !$0.isEmpty })
            redactions = built
            return built
        }
        guard let forms = found else { return text }
        var result = text
        for form in forms.written {
            switch form {
            case .anywhere(let secret): result = result.replacingOccurrences(of: secret, with: "***")
            case .alone(let pattern): result = Credentials.starring(pattern, in: result)
            }
        }
        // As a server may echo it in a URL: any of its characters percent-encoded, a space as `+`
        // too (a form's encoding: WordPress application passwords hold spaces).
        guard result.contains("%") || (result.contains("+") && forms.spaced) else { return result }
        for pattern in forms.encoded { result = Credentials.starring(pattern, in: result) }
        return result
    }

    /// `text` with each match of `pattern` replaced by `***`.
    private static func starring(_ pattern: NSRegularExpression, in text: String) -> String {
        pattern.stringByReplacingMatches(in: text, range: NSRange(text.startIndex..., in: text), withTemplate: "***")
    }

    /// The forms ``redact(_:)`` looks for, in the secrets' order.
    private struct Redactions {
        enum Form {
            /// A long secret, found anywhere.
            case anywhere(String)
            /// A short one, found where it stands alone.
            case alone(NSRegularExpression)
        }
        /// Each secret as written, and as a message quotes unusual text (git's C quoting: a `"`,
        /// `\`, byte above 0x7f).
        var written: [Form] = []
        /// Each secret with characters percent-encoded (``encodedPattern(_:)``).
        var encoded: [NSRegularExpression] = []
        /// Whether a secret holds a space (which a form's encoding writes `+`).
        var spaced = false

        init(_ secrets: [String]) {
            for secret in secrets {
                let long = secret.count >= Credentials.wholeWordLength
                let quoted = CQuoting.quoted(secret)
                for form in quoted.hasPrefix("\"") ? [secret, String(quoted.dropFirst().dropLast())] : [secret] {
                    if long {
                        written.append(.anywhere(form))
                    } else if let pattern = try? NSRegularExpression(pattern: Credentials.alone(NSRegularExpression.escapedPattern(for: form))) {
                        written.append(.alone(pattern))
                    }
                }
                let pattern = Credentials.encodedPattern(secret)
                if let compiled = try? NSRegularExpression(pattern: long ? pattern : Credentials.alone(pattern)) { encoded.append(compiled) }
                spaced = spaced || secret.contains(" ")
            }
        }
    }

    /// `pattern` where no letter or digit adjoins its match.
    static func alone(_ pattern: String) -> String { "(?<![A-Za-z0-9])(?:\(pattern))(?![A-Za-z0-9])" }

    /// A pattern matching `secret` with any of its characters written as `%XX` (its UTF-8 bytes,
    /// either case of hex digit) instead, and a space as `+`.
    static func encodedPattern(_ secret: String) -> String {
        secret.unicodeScalars.map { scalar in
            let literal = NSRegularExpression.escapedPattern(for: String(scalar))
            let encoded = String(scalar).utf8.map { byte in
                let hex = String(byte, radix: 16, uppercase: true)
                return "%" + (hex.count == 1 ? "0" + hex : hex)
            }.joined()
            return "(?:\(literal)|(?i:\(encoded))\(scalar == " " ? "|\\+" : ""))"
        }.joined()
    }

    private func variable(_ name: String, option: String) throws -> String {
        guard let value = environment[name] else {
            guard Credentials.isShownVariableName(name) else {
                throw UpstreamError.credentials(
                    "the environment variable named by option \(option) is not set (its name is not shown: not in capitals, "
                    + "it may be a pasted token or password; the option takes a variable's name, the secret goes in that variable)")
            }
            throw UpstreamError.credentials(
                "environment variable \(name) (named by option \(option)) is not set")
        }
        let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else {
            throw UpstreamError.credentials("environment variable \(name) (named by option \(option)) is empty")
        }
        guard !Credentials.hasControlCharacter(trimmed) else {
            throw UpstreamError.credentials(
                "environment variable \(name) (named by option \(option)) holds a control character or line break; it cannot be sent in a header")
        }
        return trimmed
    }
}

extension UpstreamError {
    /// The same error with every secret `credentials` resolved replaced by `***`.
    public func redacted(by credentials: Credentials) -> UpstreamError {
        let clean = credentials.redact
        switch self {
        case .invalidConfiguration(let m): return .invalidConfiguration(clean(m))
        case .malformedItem(let c, let i, let r): return .malformedItem(collection: c, item: clean(i), reason: clean(r))
        case .malformedListing(let c, let r): return .malformedListing(collection: c, reason: clean(r))
        case .unreachable(let m): return .unreachable(clean(m))
        case .http(let s, let u, let m): return .http(status: s, url: clean(u), message: clean(m))
        case .duplicateID(let c, let i): return .duplicateID(collection: c, item: clean(i))
        case .duplicateFile(let c, let i): return .duplicateFile(collection: c, item: clean(i))
        case .credentials(let m): return .credentials(clean(m))
        case .goneSinceListed(let c, let i, let r): return .goneSinceListed(collection: c, item: clean(i), reason: clean(r))
        }
    }
}

/// Runs a `tokenCommand`.
enum TokenCommand {
    /// Runs `/bin/sh -c command` with stdin from /dev/null, stderr inherited and this process's
    /// environment; returns its trimmed stdout. Blocks the calling thread (callers use a dispatch
    /// queue).
    ///
    /// Started with `posix_spawn`, not Foundation's `Process`: on Linux, `Process.run()` copies
    /// whole `readdir` entries of `/proc/self/fd` and can read past glibc's buffer in a process
    /// holding many descriptors (swift-corelibs-foundation#5472), as an app embedding tidemark may.
    static func run(_ command: String, timeout: Double) throws -> String {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else {
            throw UpstreamError.credentials("the tokenCommand could not be started: no pipe (\(String(cString: strerror(errno))))")
        }
        let (readEnd, writeEnd) = (ends[0], ends[1])
        // Neither end leaks into this or any other child; the child's stdout is a copy.
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writeEnd, F_SETFD, FD_CLOEXEC)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 1)  // the copy on 1 stays open across exec
        // Like Process, the command inherits no other descriptor of this process (glibc 2.34+).
        _ = TokenCommand.closeFrom?(&actions, 3)
        // Signals this process ignores (the CLI ignores SIGPIPE) get their default action back.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        // A process group of its own, so a timeout stops what the command started too (a
        // script's `sleep`, a hung vault client), not only the shell.
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))
        var pid: pid_t = 0
        let words: [String] = ["/bin/sh", "-c", command]
        let arguments: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        defer { arguments.forEach { free($0) } }
        let rc = posix_spawn(&pid, "/bin/sh", &actions, &attributes, arguments, environ)
        close(writeEnd)
        guard rc == 0 else {
            close(readEnd)
            throw UpstreamError.credentials("the tokenCommand could not be started: /bin/sh is not runnable")
        }
        let child = ChildState()
        let spawned = pid
        Thread {
            var output = Data()
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(readEnd, $0.baseAddress, $0.count) }
                if count > 0 {
                    output.append(contentsOf: buffer[..<count])
                } else if count == 0 || errno != EINTR {
                    break
                }
            }
            close(readEnd)
            child.finishOutput(output)
        }.start()
        Thread {
            var status: Int32 = 0
            while waitpid(spawned, &status, 0) < 0 && errno == EINTR {}
            child.finishExit(status)
        }.start()
        guard let status = child.waitForExit(timeout: timeout) else {
            kill(-spawned, SIGTERM)
            // What is left of the group a second later (what ignores SIGTERM) gets SIGKILL.
            _ = child.waitForExit(timeout: 1)
            usleep(100_000)
            kill(-spawned, SIGKILL)
            throw UpstreamError.credentials(
                "the tokenCommand did not finish within \(formatSeconds(timeout)) s and was stopped")
        }
        guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else {
            let ending = status & 0x7f == 0 ? "exit status \((status >> 8) & 0xff)" : "signal \(status & 0x7f)"
            // Its stderr went to ours; its stdout may hold a token, so it is not shown.
            throw UpstreamError.credentials("the tokenCommand failed (\(ending)); what it printed on stderr is above, its output is "
                                            + "not shown: run it by hand to see why, or set another (git config tidemark.tokenCommand "
                                            + "in a mirror, --token-command to clone)")
        }
        guard let output = child.waitForOutput(timeout: 2) else {
            throw UpstreamError.credentials("the tokenCommand exited but left its output open (a background process?)")
        }
        let token = String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty else { throw UpstreamError.credentials("the tokenCommand printed no token") }
        guard !token.contains(where: { $0.isNewline }) else {
            throw UpstreamError.credentials("the tokenCommand printed more than one line; it must print only the token")
        }
        guard !Credentials.hasControlCharacter(token) else {
            throw UpstreamError.credentials("the tokenCommand printed a control character; it cannot be sent in a header")
        }
        return token
    }

    /// `posix_spawn_file_actions_addclosefrom_np`, looked up at run time: Swift's Glibc module
    /// does not declare it.
    private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static let closeFrom: CloseFrom? =
        dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
            .map { unsafeBitCast($0, to: CloseFrom.self) }

    /// What the reading and reaping threads found, for the calling thread to wait on.
    private final class ChildState: @unchecked Sendable {
        private let condition = NSCondition()
        private var output: Data?
        private var status: Int32?

        func finishOutput(_ data: Data) { condition.withLock { output = data; condition.broadcast() } }
        func finishExit(_ value: Int32) { condition.withLock { status = value; condition.broadcast() } }

        func waitForExit(timeout: Double) -> Int32? { wait(timeout: timeout) { status } }
        func waitForOutput(timeout: Double) -> Data? { wait(timeout: timeout) { output } }

        private func wait<T>(timeout: Double, _ value: () -> T?) -> T? {
            let deadline = Date(timeIntervalSinceNow: timeout)
            condition.lock()
            defer { condition.unlock() }
            while value() == nil, condition.wait(until: deadline) {}
            return value()
        }
    }
}

func formatSeconds(_ value: Double) -> String {
    // Whole numbers as digits, while they fit an Int (a server's 21-digit Retry-After does not).
    value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(format: "%.3g", value)
}
