import Foundation
import Testing
@testable import Upstreams

@Suite struct HTTPSettingsTests {
    @Test func optionsSetAttemptsAndTimeout() throws {
        let defaults = try HTTPSettings().applying([:])
        #expect(defaults.maxAttempts == 5 && defaults.requestTimeout == 120)
        let tuned = try HTTPSettings().applying(["maxAttempts": "2", "timeout": "15"])
        #expect(tuned.maxAttempts == 2)
        #expect(tuned.requestTimeout == 15 && tuned.readTimeout == 15)
        #expect(try defaults.maxListedItems == 1_000_000 && HTTPSettings().applying(["maxItems": "7"]).maxListedItems == 7)
        for (key, value, max) in [("maxAttempts", "0", 20), ("maxAttempts", "21", 20), ("timeout", "soon", 3600), ("timeout", "-1", 3600),
                                  ("maxItems", "0", 100_000_000), ("maxItems", "100000001", 100_000_000)] {
            #expect {
                _ = try HTTPSettings().applying([key: value])
            } throws: { error in
                (error as? UpstreamError)?.description == "option \(key) must be a whole number from 1 to \(max), got '\(value)'"
            }
        }
    }

    /// The option names the certificates; without it OpenSSL's variables do, as OpenSSL reads
    /// them: both the file and the folders (`:`-separated), those that exist.
    @Test func certificatesComeFromTheOptionThenOpenSSLsVariables() throws {
        let folder = NSTemporaryDirectory() + "tidemark-trust-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder + "/certs", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        _ = FileManager.default.createFile(atPath: folder + "/ca.pem", contents: Data())
        let file = folder + "/ca.pem", certs = folder + "/certs"
        let both = ["SSL_CERT_FILE": file, "SSL_CERT_DIR": "\(folder)/missing:\(certs)"]
        #expect(try HTTPSettings().applying([:], environment: both).trustedCertificates
                == TrustedCertificates(path: file, source: "SSL_CERT_FILE", folders: [certs]))
        #expect(try HTTPSettings().applying([:], environment: ["SSL_CERT_FILE": folder + "/missing.pem", "SSL_CERT_DIR": certs])
                .trustedCertificates == TrustedCertificates(path: certs, source: "SSL_CERT_DIR"))
        #expect(try HTTPSettings().applying(["sslCAInfo": "/etc/corp.pem"], environment: both).trustedCertificates
                == TrustedCertificates(path: "/etc/corp.pem", source: "tidemark.sslCAInfo"))
        #expect(try HTTPSettings().applying([:], environment: ["SSL_CERT_FILE": ""]).trustedCertificates == nil)
        // The failure names them, and where they were named; the system's store gets advice.
        struct Described: Error, CustomStringConvertible { let description: String }
        let untrusted = Described(description: "handshakeFailed(CERTIFICATE_VERIFY_FAILED)")
        let fromEnvironment = TrustedCertificates(path: file, source: "SSL_CERT_FILE", folders: [certs])
        #expect(HTTPSession.transportFailure(untrusted, trusting: fromEnvironment).text == "the server's TLS certificate could not be verified "
                + "against the certificates in \(file) (SSL_CERT_FILE) and in \(certs) (SSL_CERT_DIR): expired, self-signed, or issued by "
                + "an authority not among them (name its certificate in tidemark.sslCAInfo: clone --option sslCAInfo=<file.pem>, "
                + "or git config tidemark.sslCAInfo <file.pem> in a mirror)")
        #expect(HTTPSession.transportFailure(untrusted).text.hasSuffix("or git config tidemark.sslCAInfo <file.pem> in a mirror)"))
    }

    @Test func factoryRejectsBadHTTPOptions() {
        #expect(throws: UpstreamError.self) {
            _ = try UpstreamFactory.make(UpstreamConfiguration(spec: "rest:https://example.org/items", options: ["maxAttempts": "x"]))
        }
    }
}
