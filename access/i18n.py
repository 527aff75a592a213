"""The readers' pages in the reader's language: one catalogue of every string, English and French.

Why one catalogue: the home page, the "not archived" answer, the reading room's refusal and the
gateway's error pages say the same things in the same words; a translator edits this file
only. The language is the browser's (``Accept-Language``, by its quality values); English when
it asks for none we have.
"""

from __future__ import annotations

import re

LANGUAGES = ("en", "fr")
DEFAULT = "en"

CATALOGUE: dict[str, dict[str, str]] = {
    "site_title": {"en": "Web archive", "fr": "Archives de l'internet"},
    "home_intro": {
        "en": "Pages of the web collected under legal deposit, as they were.",
        "fr": "Les pages du web collectées au titre du dépôt légal, telles qu'elles étaient.",
    },
    "url_label": {"en": "Look up an address", "fr": "Chercher une adresse"},
    "url_hint": {
        "en": "A page's address (example.org/page.html), or a site followed by * for all its"
        " archived addresses (example.org/*)",
        "fr": "L'adresse d'une page (example.org/page.html), ou un site suivi de * pour toutes"
        " ses adresses archivées (example.org/*)",
    },
    "url_button": {"en": "Show the captures", "fr": "Voir les captures"},
    "text_label": {"en": "Search the archived text", "fr": "Rechercher dans le texte archivé"},
    "text_button": {"en": "Search", "fr": "Rechercher"},
    "tours": {"en": "Guided tours", "fr": "Visites guidées"},
    "collections": {"en": "Collections", "fr": "Collections"},
    "all_title": {"en": "The whole archive", "fr": "Toute l'archive"},
    "all_description": {
        "en": "Every capture of every harvest.",
        "fr": "Toutes les captures de toutes les collectes.",
    },
    "kind_partial": {"en": "selective harvest", "fr": "collecte ciblée"},
    "kind_full": {"en": "broad crawl", "fr": "collecte large"},
    "captures": {"en": "captures", "fr": "captures"},
    "from_to": {"en": "from {first} to {last}", "fr": "du {first} au {last}"},
    "no_capture_yet": {"en": "no capture yet", "fr": "pas encore de capture"},
    "captured_on": {"en": "captured {when}", "fr": "capturé le {when}"},
    "not_archived_title": {"en": "Not in the archive", "fr": "Absent de l'archive"},
    "not_archived": {
        "en": "The archive holds no capture of {url}.",
        "fr": "L'archive ne contient aucune capture de {url}.",
    },
    "not_archived_prefix": {
        "en": "The archive holds no address starting with {url}.",
        "fr": "L'archive ne contient aucune adresse commençant par {url}.",
    },
    "empty_address": {
        "en": "Type an address to look up.",
        "fr": "Saisissez une adresse à chercher.",
    },
    "bad_address": {
        "en": "{url} is not a web address (http or https).",
        "fr": "{url} n'est pas une adresse web (http ou https).",
    },
    "restricted_title": {"en": "Consultation restricted", "fr": "Consultation restreinte"},
    "restricted": {
        "en": "The web archive collected under legal deposit can be consulted only in the"
        " reading rooms of the library, or by accredited users signed in.",
        "fr": "Les archives de l'internet collectées au titre du dépôt légal se consultent"
        " uniquement dans les salles de lecture de la bibliothèque, ou par les personnes"
        " accréditées connectées.",
    },
    "capture_restricted": {
        "en": "The archive holds {url}, but an access rule (a restriction under legal deposit,"
        " or an embargo after capture) does not allow this capture to be shown.",
        "fr": "L'archive contient {url}, mais une règle d'accès (une restriction au titre du"
        " dépôt légal, ou un embargo après la collecte) ne permet pas d'afficher cette capture.",
    },
    "sign_in": {"en": "Sign in", "fr": "Se connecter"},
    "back_home": {"en": "Collections and guided tours", "fr": "Collections et visites guidées"},
    "bad_request": {"en": "Bad request", "fr": "Requête incorrecte"},
    "bad_sign_in": {"en": "Bad sign-in link", "fr": "Lien de connexion incorrect"},
    "request_refused": {"en": "Request refused", "fr": "Requête refusée"},
    "replay_unavailable": {"en": "Replay unavailable", "fr": "Consultation indisponible"},
    "replay_unavailable_text": {
        "en": "The replay service did not answer; try later.",
        "fr": "Le service de consultation n'a pas répondu ; réessayez plus tard.",
    },
    "replay_failed": {"en": "Replay failed", "fr": "Échec de la consultation"},
    "replay_failed_text": {
        "en": "The replay service could not answer this request.",
        "fr": "Le service de consultation n'a pas pu répondre à cette demande.",
    },
    "not_web_capture": {
        "en": "This address is not in the archive's web pages.",
        "fr": "Cette adresse ne fait pas partie des pages web de l'archive.",
    },
}

_TAG = re.compile(r"^\s*([A-Za-z]{1,8})(?:-[A-Za-z0-9]{1,8})*\s*(?:;\s*q\s*=\s*([0-9.]{1,5}))?\s*$")


def language(accept_language: str | None) -> str:
    """The language of ``LANGUAGES`` the browser prefers (``Accept-Language``), else English."""
    best, best_q = DEFAULT, 0.0
    for n, part in enumerate((accept_language or "")[:500].split(",")):
        found = _TAG.match(part)
        if not found:
            continue
        try:
            q = float(found.group(2)) if found.group(2) else 1.0
        except ValueError:
            continue
        lang = found.group(1).lower()
        rank = q - n * 1e-6  # equal weights: the first listed wins
        if lang in LANGUAGES and q > 0 and rank > best_q:
            best, best_q = lang, rank
    return best


def texts(lang: str) -> dict[str, str]:
    """Every string of the catalogue in ``lang`` (English for a string not translated)."""
    return {key: words.get(lang) or words[DEFAULT] for key, words in CATALOGUE.items()}


def number(value: int, lang: str) -> str:
    """A whole number grouped by thousands as ``lang`` writes it (12,345; 12 345)."""
    grouped = f"{int(value):,}"
    return grouped.replace(",", "\u202f") if lang == "fr" else grouped
