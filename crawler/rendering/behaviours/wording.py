"""Our own small table of button wordings: consent answers (the fallback when autoconsent's
rules know no dialog on the page) and "load more" buttons, in English, French, German, Spanish,
Italian, Dutch and the Nordic languages (Swedish, Danish, Norwegian, Finnish, Icelandic).

Why whole labels, lower-cased, and a dialog around them: a button is clicked only when its
whole label is one of these (never "Accept the terms and pay") and, for consent, only inside
an overlay or a frame whose text speaks of cookies or consent (``CONSENT_HINTS``); page.js
applies both. Add a wording here when a site's dialog is missed (a test names each language).
"""

from __future__ import annotations

# fmt: off
CONSENT_ACCEPT: dict[str, tuple[str, ...]] = {
    "en": (
        "accept", "accept all", "accept all cookies", "accept cookies", "i accept", "agree",
        "i agree", "agree and continue", "accept and continue", "accept and close",
        "allow all", "allow all cookies", "allow cookies", "ok", "got it", "yes, i agree",
    ),
    "fr": (
        "accepter", "tout accepter", "accepter tout", "j'accepte", "j’accepte",
        "accepter et continuer", "accepter et fermer", "accepter les cookies",
        "accepter tous les cookies", "autoriser tous les cookies", "ok pour moi", "d'accord",
        "j'ai compris",
    ),
    "de": (
        "akzeptieren", "alle akzeptieren", "alle cookies akzeptieren", "zustimmen",
        "allen zustimmen", "alle zulassen", "einverstanden", "ich stimme zu", "annehmen",
        "alle annehmen", "zustimmen und weiter", "akzeptieren und schließen",
    ),
    "es": (
        "aceptar", "aceptar todo", "aceptar todas", "aceptar cookies", "aceptar todas las cookies",
        "acepto", "aceptar y continuar", "aceptar y cerrar", "permitir todas", "de acuerdo",
    ),
    "it": (
        "accetta", "accetta tutto", "accetta tutti", "accetto", "accetta i cookie",
        "accetta tutti i cookie", "acconsento", "accetta e chiudi", "accetta e continua",
    ),
    "nl": (
        "accepteren", "alles accepteren", "alle cookies accepteren", "akkoord", "ik ga akkoord",
        "toestaan", "alles toestaan", "alle cookies toestaan", "accepteer", "accepteer alles",
    ),
    "sv": ("acceptera", "acceptera alla", "godkänn", "godkänn alla", "jag godkänner", "tillåt alla"),
    "da": ("accepter", "accepter alle", "accepter alle cookies", "tillad alle", "jeg accepterer"),
    "no": ("godta", "godta alle", "aksepter", "aksepter alle", "tillat alle", "jeg godtar"),
    "fi": ("hyväksy", "hyväksy kaikki", "hyväksyn", "salli kaikki", "hyväksy evästeet"),
    "is": ("samþykkja", "samþykkja allt", "samþykki", "leyfa allt"),
}

CONSENT_REJECT: dict[str, tuple[str, ...]] = {
    "en": (
        "reject", "reject all", "reject all cookies", "decline", "decline all", "deny",
        "refuse", "refuse all", "only necessary", "necessary only", "necessary cookies only",
        "use necessary cookies only", "continue without accepting",
    ),
    "fr": ("refuser", "tout refuser", "refuser tout", "je refuse", "continuer sans accepter"),
    "de": (
        "ablehnen", "alle ablehnen", "nur notwendige", "nur notwendige cookies",
        "nur essenzielle cookies", "nur erforderliche cookies",
    ),
    "es": ("rechazar", "rechazar todo", "rechazar todas", "denegar", "solo necesarias"),
    "it": ("rifiuta", "rifiuta tutto", "rifiuta tutti", "continua senza accettare", "solo necessari"),
    "nl": ("weigeren", "alles weigeren", "alleen noodzakelijke", "alleen noodzakelijke cookies"),
    "sv": ("avvisa", "avvisa alla", "neka", "neka alla", "endast nödvändiga"),
    "da": ("afvis", "afvis alle", "kun nødvendige", "kun nødvendige cookies"),
    "no": ("avvis", "avvis alle", "avslå", "avslå alle", "kun nødvendige"),
    "fi": ("hylkää", "hylkää kaikki", "vain välttämättömät", "kieltäydy"),
    "is": ("hafna", "hafna öllu", "aðeins nauðsynlegar"),
}

# words of a consent dialog's text (the box a consent button must be in)
CONSENT_HINTS: tuple[str, ...] = (
    "cookie", "consent", "gdpr", "privacy", "confidentialité", "traceurs", "consentement",
    "datenschutz", "einwilligung", "privacidad", "consentimiento", "riservatezza", "consenso",
    "toestemming", "samtycke", "kakor", "samtykke", "informasjonskapsler", "personvern",
    "evästeet", "eväste", "tietosuoja", "vafrakökur", "persónuvernd",
)

LOAD_MORE: tuple[str, ...] = (
    # en
    "load more", "show more", "see more", "view more", "more", "more results", "more stories",
    "more articles", "load more results", "next", "next page", "older posts", "older",
    # fr
    "voir plus", "afficher plus", "charger plus", "plus de résultats", "plus d'articles",
    "page suivante", "suivant",
    # de
    "mehr laden", "mehr anzeigen", "weitere laden", "weitere anzeigen", "mehr", "nächste seite",
    "weiter",
    # es
    "cargar más", "ver más", "mostrar más", "más resultados", "siguiente", "página siguiente",
    # it
    "carica altro", "carica altri", "mostra altro", "mostra di più", "vedi altro", "successivo",
    "pagina successiva",
    # nl
    "meer laden", "toon meer", "meer tonen", "bekijk meer", "meer", "volgende", "volgende pagina",
    # nordic
    "visa fler", "visa mer", "ladda fler", "läs in fler", "nästa", "vis flere", "vis mere",
    "indlæs flere", "hent flere", "last inn flere", "neste", "næste", "näytä lisää", "lataa lisää",
    "seuraava", "sýna meira", "hlaða fleiri", "næsta",
)
# fmt: on


def consent_words(mode: str) -> list[str]:
    """The whole-label wordings the fallback clicks for ``accept`` or ``reject``."""
    table = CONSENT_ACCEPT if mode == "accept" else CONSENT_REJECT
    return sorted({w for words in table.values() for w in words})
