#!/usr/bin/python3
"""A SAML service provider made of pysaml2 (Debian's python3-pysaml2, signing and verifying with
xmlsec1), for Sigil's tests: an implementation other than Sigil's reads what Sigil sends.

Each command prints one JSON object (or the SP's metadata) on stdout; a refusal by pysaml2 exits
non-zero with its reason on stderr.

  metadata                      the SP's metadata (signed AuthnRequests, signed assertions wanted)
  login                         a signed AuthnRequest in the HTTP-Redirect binding: {"url", "id"}
  acs RESPONSE REQUEST_ID       reads a posted Response (base64), its signatures checked against
                                Sigil's metadata: {"nameId", "nameIdFormat", "sessionIndex", "attributes"}
  logout NAME_ID SESSION_INDEX  a signed LogoutRequest in the HTTP-Redirect binding: {"url", "id"}
  logout-response QUERY         reads Sigil's LogoutResponse from the query of the redirect to the
                                SP's single logout URL, its query signature checked: {"inResponseTo", "status"}

Settings come from the environment: SP_ENTITY_ID, SP_BASE (the ACS is SP_BASE/acs, the single
logout endpoint SP_BASE/slo), SP_KEY and SP_CERT (PEM files), IDP_METADATA (a file); with SP_ENC_KEY
and SP_ENC_CERT (PEM files), a second key pair for encryption: its certificate is in the metadata
(KeyDescriptor use="encryption") and pysaml2 decrypts encrypted assertions with its key.
"""
import json
import os
import sys
from urllib.parse import parse_qs, urlparse

from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT
from saml2.client import Saml2Client
from saml2.config import SPConfig
from saml2.metadata import create_metadata_string
from saml2.saml import NAMEID_FORMAT_PERSISTENT, NameID
from saml2.sigver import verify_redirect_signature
from saml2.xmldsig import DIGEST_SHA256, SIG_RSA_SHA256


def config(with_idp=True):
    base = os.environ["SP_BASE"]
    settings = {
        "entityid": os.environ["SP_ENTITY_ID"],
        "key_file": os.environ["SP_KEY"],
        "cert_file": os.environ["SP_CERT"],
        "xmlsec_binary": "/usr/bin/xmlsec1",
        "allow_unknown_attributes": True,
        "service": {
            "sp": {
                "endpoints": {
                    "assertion_consumer_service": [(f"{base}/acs", BINDING_HTTP_POST)],
                    "single_logout_service": [(f"{base}/slo", BINDING_HTTP_REDIRECT)],
                },
                "authn_requests_signed": True,
                "logout_requests_signed": True,
                "want_assertions_signed": True,
                "want_response_signed": True,
                "allow_unsolicited": False,
                "name_id_format": [NAMEID_FORMAT_PERSISTENT],
                "signing_algorithm": SIG_RSA_SHA256,
                "digest_algorithm": DIGEST_SHA256,
            }
        },
    }
    if os.environ.get("SP_ENC_KEY"):
        settings["encryption_keypairs"] = [
            {"key_file": os.environ["SP_ENC_KEY"], "cert_file": os.environ["SP_ENC_CERT"]}
        ]
    if with_idp:
        settings["metadata"] = {"local": [os.environ["IDP_METADATA"]]}
    sp = SPConfig()
    sp.load(settings)
    return sp


def idp_entity_id(client):
    return next(iter(client.metadata.identity_providers()))


def location(info):
    return dict(info["headers"])["Location"]


def main(argv):
    command = argv[1]
    if command == "metadata":
        print(create_metadata_string(None, config(with_idp=False), valid=24).decode())
        return
    client = Saml2Client(config=config())
    idp = idp_entity_id(client)
    if command == "login":
        request_id, info = client.prepare_for_authenticate(
            entityid=idp, relay_state="pysaml2", binding=BINDING_HTTP_REDIRECT,
            sigalg=SIG_RSA_SHA256, digest_alg=DIGEST_SHA256,
        )
        print(json.dumps({"url": location(info), "id": request_id}))
    elif command == "acs":
        response = client.parse_authn_request_response(
            argv[2], BINDING_HTTP_POST, outstanding={argv[3]: "/"}
        )
        if response is None:
            sys.exit("pysaml2 refused the response")
        name_id = response.assertion.subject.name_id
        statement = response.assertion.authn_statement[0]
        print(json.dumps({
            "nameId": name_id.text,
            "nameIdFormat": name_id.format,
            "sessionIndex": statement.session_index,
            "attributes": response.ava,
        }))
    elif command == "logout":
        destination = client.metadata.single_logout_service(idp, BINDING_HTTP_REDIRECT, "idpsso")[0]["location"]
        name_id = NameID(text=argv[2], format=NAMEID_FORMAT_PERSISTENT, sp_name_qualifier=client.config.entityid)
        request_id, request = client.create_logout_request(
            destination, idp, name_id=name_id, session_indexes=[argv[3]], sign=False,
        )
        info = client.apply_binding(
            BINDING_HTTP_REDIRECT, str(request), destination, "pysaml2-logout", sign=True, sigalg=SIG_RSA_SHA256,
        )
        print(json.dumps({"url": location(info), "id": request_id}))
    elif command == "logout-response":
        query = {k: v[0] for k, v in parse_qs(urlparse(argv[2]).query).items()}
        certs = client.metadata.certs(idp, "idpsso", "signing")
        if not any(verify_redirect_signature(query, client.sec.sec_backend, cert=cert) for cert in certs):
            sys.exit("the LogoutResponse's query signature does not verify")
        response = client.parse_logout_request_response(query["SAMLResponse"], BINDING_HTTP_REDIRECT)
        if response is None:
            sys.exit("pysaml2 refused the logout response")
        print(json.dumps({
            "inResponseTo": response.response.in_response_to,
            "status": response.response.status.status_code.value,
        }))
    else:
        sys.exit(f"unknown command {command}")


if __name__ == "__main__":
    main(sys.argv)
