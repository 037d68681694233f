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

    @Test func certificatesComeFromTheOptionThenOpenSSLsVariables() throws {
        let file = TrustedCertificates(path: "/env/ca.pem", source: "SSL_CERT_FILE")
        let both = ["SSL_CERT_FILE": "/env/ca.pem", "SSL_CERT_DIR": "/env/certs"]
        #expect(try HTTPSettings().applying([:], environment: both).trustedCertificates == file)
        #expect(try HTTPSettings().applying([:], environment: ["SSL_CERT_FILE": "", "SSL_CERT_DIR": "/env/certs"]).trustedCertificates
                == TrustedCertificates(path: "/env/certs", source: "SSL_CERT_DIR"))
        #expect(try HTTPSettings().applying(["sslCAInfo": "/etc/corp.pem"], environment: both).trustedCertificates
                == TrustedCertificates(path: "/etc/corp.pem", source: "tidemark.sslCAInfo"))
        #expect(try HTTPSettings().applying([:], environment: ["SSL_CERT_FILE": ""]).trustedCertificates == nil)
        // The failure names them, and where they were named; the system's store gets advice.
        struct Described: Error, CustomStringConvertible { let description: String }
        let untrusted = Described(description: "handshakeFailed(CERTIFICATE_VERIFY_FAILED)")
        #expect(HTTPSession.transportFailure(untrusted, trusting: file).text == "the server's TLS certificate could not be verified "
                + "against the certificates in /env/ca.pem (SSL_CERT_FILE): expired, self-signed, or issued by an authority not among "
                + "them (name its certificate: git config tidemark.sslCAInfo <file.pem>)")
        #expect(HTTPSession.transportFailure(untrusted).text.hasSuffix("or name its certificate: git config tidemark.sslCAInfo <file.pem>)"))
    }

    @Test func factoryRejectsBadHTTPOptions() {
        #expect(throws: UpstreamError.self) {
            _ = try UpstreamFactory.make(UpstreamConfiguration(spec: "rest:https://example.org/items", options: ["maxAttempts": "x"]))
        }
    }
}
