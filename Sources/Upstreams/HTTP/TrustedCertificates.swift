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
    /// More folders trusted too (`SSL_CERT_DIR` beside `SSL_CERT_FILE`, or its `:`-separated list),
    /// as OpenSSL trusts both.
    public var folders: [String]

    public init(path: String, source: String, folders: [String] = []) {
        self.path = path
        self.source = source
        self.folders = folders
    }

    /// OpenSSL's variables, as OpenSSL reads them: the file `SSL_CERT_FILE` names and the folders
    /// of `SSL_CERT_DIR` (separated by `:`), those that exist; nil when none does (the system's
    /// store is used then).
    public static func fromEnvironment(_ environment: [String: String]) -> TrustedCertificates? {
        func exists(_ path: String) -> Bool { !path.isEmpty && FileManager.default.fileExists(atPath: path) }
        let file = environment["SSL_CERT_FILE"].flatMap { exists($0) ? $0 : nil }
        let folders = (environment["SSL_CERT_DIR"] ?? "").split(separator: ":").map(String.init).filter(exists)
        if let file { return TrustedCertificates(path: file, source: "SSL_CERT_FILE", folders: folders) }
        guard let first = folders.first else { return nil }
        return TrustedCertificates(path: first, source: "SSL_CERT_DIR", folders: Array(folders.dropFirst()))
    }

    /// The certificates in words, for an error: "the certificates in /etc/corp/ca.pem (tidemark.sslCAInfo)".
    public var described: String {
        "the certificates in \(path) (\(source))"
            + (folders.isEmpty ? "" : " and in \(folders.joined(separator: ", ")) (SSL_CERT_DIR)")
    }

    /// A client TLS configuration trusting these certificates only. A file is read now, so that
    /// a missing, unreadable or empty one is said before any request.
    /// - Throws: ``UpstreamError/invalidConfiguration(_:)`` naming ``source`` and the path.
    func clientConfiguration() throws -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        guard !path.isEmpty else { throw problem("is empty: name a PEM file of certificates, or a folder of them") }
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
            throw problem("names '\(path)', which does not exist")
        }
        // One folder is looked up by hash as the handshake needs its certificates (`openssl
        // rehash` names them so); a file's, and other folders', are read now.
        var fileCertificates: [NIOSSLCertificate] = []
        var hashedFolder: String?
        if isFolder.boolValue {
            guard source != "tidemark.sslCAInfo" || Self.holdsHashedNames(path) else {
                throw problem("names the folder '\(path)', which holds no certificate named by its hash: run 'openssl rehash \(path)', "
                              + "or name a PEM file")
            }
            hashedFolder = path
        } else {
            fileCertificates = try certificates(inFile: path)
            hashedFolder = folders.first
        }
        var more = hashedFolder == nil ? [] : fileCertificates
        for folder in folders where folder != hashedFolder {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
            for name in names.sorted() {
                more += (try? NIOSSLCertificate.fromPEMFile(folder + "/" + name)) ?? []
            }
        }
        configuration.trustRoots = hashedFolder.map { .file($0) } ?? .certificates(fileCertificates)
        if !more.isEmpty { configuration.additionalTrustRoots = [.certificates(more)] }
        return configuration
    }

    /// The certificates of the PEM file at `path`.
    private func certificates(inFile path: String) throws -> [NIOSSLCertificate] {
        guard let bytes = FileManager.default.contents(atPath: path) else {
            throw problem("names '\(path)', which cannot be read")
        }
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMBytes(Array(bytes))
        } catch {
            let blocks = String(decoding: bytes, as: UTF8.self).components(separatedBy: "-----BEGIN CERTIFICATE-----").count - 1
            throw problem(blocks == 0
                ? "names '\(path)', which is not a file of PEM certificates (-----BEGIN CERTIFICATE-----)"
                : "names '\(path)', one of whose \(blocks) PEM certificate\(blocks == 1 ? "" : "s") cannot be read (\(error))")
        }
        guard !certificates.isEmpty else {
            throw problem("names '\(path)', which holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
        }
        return certificates
    }

    /// True when `folder` holds a file named as `openssl rehash` names them (`1a2b3c4d.0`).
    private static func holdsHashedNames(_ folder: String) -> Bool {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.contains { name in
            let parts = name.split(separator: ".")
            return parts.count == 2 && parts[0].count == 8 && parts[0].allSatisfy(\.isHexDigit) && parts[1].allSatisfy(\.isNumber)
        }
    }

    /// An error about the setting, worded as the other options' are ("option sslCAInfo ...",
    /// which the engine names as `config tidemark.sslCAInfo`).
    private func problem(_ text: String) -> UpstreamError {
        let subject = source == "tidemark.sslCAInfo" ? "option sslCAInfo" : "environment variable \(source)"
        return .invalidConfiguration("\(subject) \(text)")
    }
}
