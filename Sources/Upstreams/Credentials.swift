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
///   credential helper. Fails after `commandTimeout` seconds (default 10).
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
    private var pending: Task<Credential?, any Error>?

    /// Reads the credential options from `options`.
    /// - Throws: ``UpstreamError/invalidConfiguration(_:)`` when more than one is given or
    ///   `basicEnv` is not `USER_VAR:PASS_VAR`.
    public init(
        options: [String: String], environment: [String: String] = ProcessInfo.processInfo.environment,
        commandTimeout: Double = 10
    ) throws {
        let given = ["tokenEnv", "tokenCommand", "basicEnv"].filter { options[$0] != nil }
        guard given.count <= 1 else {
            throw UpstreamError.invalidConfiguration(
                "give only one of the options \(given.joined(separator: ", ")) (they all name credentials)")
        }
        if let name = options["tokenEnv"] {
            guard !name.isEmpty else { throw UpstreamError.invalidConfiguration("option tokenEnv needs a variable name") }
            source = .tokenEnv(name)
        } else if let command = options["tokenCommand"] {
            guard !command.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw UpstreamError.invalidConfiguration("option tokenCommand needs a command")
            }
            source = .tokenCommand(command)
        } else if let pair = options["basicEnv"] {
            let parts = pair.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw UpstreamError.invalidConfiguration(
                    "option basicEnv must be USER_VAR:PASS_VAR (two environment variable names), got '\(pair)'")
            }
            source = .basicEnv(user: parts[0], password: parts[1])
        } else {
            source = .none
        }
        self.environment = environment
        self.commandTimeout = commandTimeout
    }

    /// True when some credential option is configured.
    public var isConfigured: Bool { source != .none }

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
        lock.withLock { resolved = .some(credential) }
        return credential
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

    /// `text` with every resolved secret (token, password, Basic header value) replaced by `***`.
    public func redact(_ text: String) -> String {
        guard let credential = lock.withLock({ resolved }) ?? nil else { return text }
        var result = text
        for secret in credential.secrets where !secret.isEmpty {
            result = result.replacingOccurrences(of: secret, with: "***")
        }
        return result
    }

    private func variable(_ name: String, option: String) throws -> String {
        guard let value = environment[name] else {
            throw UpstreamError.credentials(
                "environment variable \(name) (named by option \(option)) is not set")
        }
        let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else {
            throw UpstreamError.credentials("environment variable \(name) (named by option \(option)) is empty")
        }
        return trimmed
    }
}

/// Runs a `tokenCommand`.
enum TokenCommand {
    /// Runs `/bin/sh -c command` with stdin from /dev/null and stderr inherited; returns its
    /// trimmed stdout. Blocks the calling thread (callers use a dispatch queue).
    static func run(_ command: String, timeout: Double) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command]
        process.standardInput = FileHandle.nullDevice
        let output = Pipe()
        process.standardOutput = output
        let exited = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in exited.signal() }
        let collected = OutputBox()
        let reader = DispatchSemaphore(value: 0)
        do {
            try process.run()
        } catch {
            throw UpstreamError.credentials("the tokenCommand could not be started: /bin/sh is not runnable")
        }
        DispatchQueue.global().async {
            collected.set(output.fileHandleForReading.readDataToEndOfFile())
            reader.signal()
        }
        if exited.wait(timeout: .now() + timeout) == .timedOut {
            process.terminate()
            throw UpstreamError.credentials(
                "the tokenCommand did not finish within \(formatSeconds(timeout)) s and was stopped")
        }
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            throw UpstreamError.credentials(
                "the tokenCommand failed (exit status \(process.terminationStatus)); its output is not shown")
        }
        guard reader.wait(timeout: .now() + 2) == .success else {
            throw UpstreamError.credentials("the tokenCommand exited but left its output open (a background process?)")
        }
        let token = String(decoding: collected.get(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty else { throw UpstreamError.credentials("the tokenCommand printed no token") }
        guard !token.contains(where: { $0.isNewline }) else {
            throw UpstreamError.credentials("the tokenCommand printed more than one line; it must print only the token")
        }
        return token
    }

    private final class OutputBox: @unchecked Sendable {
        private let lock = NSLock()
        private var data = Data()
        func set(_ value: Data) { lock.withLock { data = value } }
        func get() -> Data { lock.withLock { data } }
    }
}

func formatSeconds(_ value: Double) -> String {
    value == value.rounded() ? String(Int(value)) : String(format: "%.3g", value)
}
