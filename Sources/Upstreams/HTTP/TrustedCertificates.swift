import Foundation
import NIOSSL

/// Certificates trusted instead of the system's, for an upstream whose TLS certificate a private
/// authority issued: a PEM file of one or more certificates (git's `http.sslCAInfo`, curl's
/// `--cacert`), or a folder of them named by hash as `openssl rehash` leaves it (`SSL_CERT_DIR`).
public struct TrustedCertificates: Sendable, Equatable {
    /// The file or folder; a relative path is relative to the current folder.
    public var path: String
    /// Where it was named, for messages: `tidemark.sslCAInfo`, `SSL_CERT_FILE` or `SSL_CERT_DIR`.
    public var source: String

    public init(path: String, source: String) {
        self.path = path
        self.source = source
    }

    /// The certificates in words, for an error: "the certificates in /etc/corp/ca.pem (tidemark.sslCAInfo)".
    public var described: String { "the certificates in \(path) (\(source))" }

    /// A client TLS configuration trusting these certificates only. A file is read now, so that
    /// a missing, unreadable or empty one is said before any request.
    /// - Throws: ``UpstreamError/invalidConfiguration(_:)`` naming ``source`` and the path.
    func clientConfiguration() throws -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
            throw problem("names '\(path)', which does not exist")
        }
        if isFolder.boolValue {
            configuration.trustRoots = .file(path)
            return configuration
        }
        guard let bytes = FileManager.default.contents(atPath: path) else {
            throw problem("names '\(path)', which cannot be read")
        }
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMBytes(Array(bytes))
        } catch {
            throw problem("names '\(path)', which is not a file of PEM certificates (-----BEGIN CERTIFICATE-----)")
        }
        guard !certificates.isEmpty else {
            throw problem("names '\(path)', which holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
        }
        configuration.trustRoots = .certificates(certificates)
        return configuration
    }

    /// An error about the setting, worded as the other options' are ("option sslCAInfo ...",
    /// which the engine names as `config tidemark.sslCAInfo`).
    private func problem(_ text: String) -> UpstreamError {
        let subject = source == "tidemark.sslCAInfo" ? "option sslCAInfo" : "environment variable \(source)"
        return .invalidConfiguration("\(subject) \(text)")
    }
}
