"""Generate the sample quote job in ``data/sample/`` (deterministic, offline).

A commercial basement-and-podium waterproofing quote like the paper's: a
multi-sheet workbook of about 1,000 rows with the near-duplicate scope lines
real workbooks have, a short specification PDF, a Markdown site memo, a
25-query evaluation set whose gold chunk ids come from the rows and
paragraphs the generator planted, and a TOML profile.

    .venv/bin/python scripts/make_sample_corpus.py [--out data/sample]

Same seed, same files: the RNG is seeded, workbook and PDF timestamps are
fixed and the .xlsx zip is rewritten with fixed entry dates.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import random
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import openpyxl
from fpdf import FPDF
from openpyxl.styles import Font

from esbubble.ingest import IngestOptions, read_document
from esbubble.ingest.ids import chunk_id

SEED = 20250314
FIXED_TIME = dt.datetime(2025, 3, 14, 9, 0, 0)
CURRENCY = '"$"#,##0.00'
DATE_FORMAT = "d mmm yyyy"
XLSX_NAME, PDF_NAME, MEMO_NAME = "quote_job.xlsx", "specification.pdf", "site_memo.md"

CLIENT = "Meridian Property Group Pty Ltd"
CONTRACTOR = "AquaSeal Contracting Pty Ltd"
PROJECT = "Harbourside Residences, 41 Bank Street, Pyrmont NSW"
QUOTE_NO = "Q-2025-0147"

LEVELS = ["Basement B3", "Basement B2", "Basement B1", "Ground", "Podium L1", "Podium L2"]
SUBSTRATES = ["cast in situ concrete", "precast concrete panel", "blockwork", "shotcrete", "screeded slab"]
PREP = [
    "mechanical grinding to remove laitance",
    "high pressure water cleaning",
    "removal of form oil and curing compound",
    "filling of blowholes with repair mortar",
    "patching of honeycombing with polymer-modified mortar",
]
DETAILS = [
    "fillet seals at all internal corners",
    "bond breaker to movement joints",
    "reinforcing fabric at cold joints",
    "puddle flanges to all penetrations",
    "termination bars at the top edge",
]
CONDITIONS = [
    "Work to be done in dry conditions with substrate moisture below 5%.",
    "Allow for two coats with a minimum 12 hour recoat window.",
    "Membrane to be inspected by the site supervisor before protection is placed.",
    "Sequence to suit the builder's pour programme and formwork stripping.",
    "Access by scissor lift supplied by the builder.",
]


@dataclass
class SheetSpec:
    """One worksheet: title, header row(s), data rows and which rows answer which query."""

    name: str
    headers: list[str]
    rows: list[list[object]] = field(default_factory=list)
    tags: dict[int, list[str]] = field(default_factory=dict)  # row index in ``rows`` -> query ids
    formats: dict[int, str] = field(default_factory=dict)  # column index -> number format

    def add(self, row: list[object], *tags: str) -> None:
        if any(tags):
            self.tags.setdefault(len(self.rows), []).extend(t for t in tags if t)
        self.rows.append(row)


def _pick(rng: random.Random, items: list[str]) -> str:
    return items[rng.randrange(len(items))]


# --- Scope of Works ------------------------------------------------------------------------------------

SCOPE_SYSTEMS = [
    ("basement retaining walls", "bituminous sheet membrane with protection board", "m2"),
    ("basement slab on ground", "pre-applied HDPE sheet membrane under slab", "m2"),
    ("lift pits", "crystalline waterproofing slurry, two coats", "m2"),
    ("podium slab", "cold-applied polyurethane liquid membrane, 1.5 mm dry film", "m2"),
    ("planter boxes", "polyurethane membrane with root barrier and drainage cell", "m2"),
    ("wet areas", "water-based acrylic membrane to AS 3740", "m2"),
    ("expansion joints", "preformed EPDM joint strip bonded with epoxy", "lm"),
    ("balconies", "polyurethane membrane under screed with puddle flanges", "m2"),
]


def scope_sheet(rng: random.Random) -> SheetSpec:
    sheet = SheetSpec(
        "Scope of Works", ["Item", "Area", "Level", "Description", "Method", "Quantity", "Unit", "Notes"]
    )
    summaries = {
        "basement retaining walls": "Area summary: waterproof all basement retaining walls from footing to "
        "ground line with a fully bonded bituminous sheet membrane, protection board and strip drain, "
        "so the basement car park stays dry under groundwater pressure.",
        "lift pits": "Area summary: waterproof the two lift pits and the sump pit internally with a "
        "crystalline slurry system, including hydrostatic pressure relief detailing at the pit base.",
        "podium slab": "Area summary: waterproof the full podium slab over the basement with a "
        "cold-applied polyurethane membrane laid to falls, turned up 150 mm at walls and upstands.",
        "planter boxes": "Area summary: waterproof all podium planter boxes with polyurethane membrane, "
        "root barrier, drainage cell and geotextile before soil placement by the landscaper.",
        "wet areas": "Area summary: waterproof bathrooms, ensuites and laundries in all 84 apartments "
        "to AS 3740 with an acrylic membrane, bond breakers and puddle flanges to every floor waste.",
    }
    item = 1
    for area, system, unit in SCOPE_SYSTEMS:
        if area in summaries:
            extra = {
                "podium slab": ["q_podium_scope"],
                "planter boxes": ["q_planter"],
                "wet areas": ["q_wet_areas"],
                "basement retaining walls": ["q_below_grade"],
            }.get(area, [])
            tag = ["q_scope", *extra]
            sheet.add([f"{item}.0", area.title(), "All", summaries[area], system, None, None, ""], *tag)
        # Repeated scope lines per level with small variations: the near-duplicates real quotes have.
        for level in LEVELS:
            for variant in range(rng.randint(3, 5)):
                substrate, prep, detail = _pick(rng, SUBSTRATES), _pick(rng, PREP), _pick(rng, DETAILS)
                quantity = rng.randint(12, 480)
                description = (
                    f"Supply and install {system} to {area} at {level.lower()}, on {substrate}, "
                    f"including {prep}, {detail} and all laps sealed to the manufacturer's details."
                )
                notes = _pick(rng, CONDITIONS)
                if variant == 0:
                    notes += " Refer to drawing WP-" + str(100 + LEVELS.index(level) * 10 + item) + "."
                sheet.add(
                    [
                        f"{item}.{len(sheet.rows) % 97 + 1}",
                        area.title(),
                        level,
                        description,
                        system,
                        quantity,
                        unit,
                        notes,
                    ]
                )
        item += 1
    sheet.add(
        [
            f"{item}.0",
            "Flood Testing",
            "Podium L1",
            "Flood test every podium and planter membrane for 24 hours at 50 mm depth before "
            "screeds or soil are placed; record results on the inspection and test plan.",
            "Flood test to AS 4654.2",
            1,
            "item",
            "Builder to witness and sign off each test area.",
        ],
        "q_flood_test",
    )
    return sheet


# --- Below Grade ---------------------------------------------------------------------------------------

BELOW_GRADE_ELEMENTS = [
    ("Retaining wall, north", "Bituminous sheet membrane", "4.0 mm", "6 mm HDPE protection board"),
    ("Retaining wall, east", "Bituminous sheet membrane", "4.0 mm", "6 mm HDPE protection board"),
    ("Slab on ground", "Pre-applied HDPE sheet membrane", "1.2 mm", "50 mm blinding above"),
    ("Lift pit 1", "Crystalline slurry", "1.0 kg/m2 per coat", "none required"),
    ("Lift pit 2", "Crystalline slurry", "1.0 kg/m2 per coat", "none required"),
    ("Sump pit", "Crystalline slurry", "1.0 kg/m2 per coat", "none required"),
    ("Pile caps", "Pre-applied HDPE sheet membrane", "1.2 mm", "50 mm blinding above"),
    ("Stormwater tank", "Crystalline admixture to concrete", "dosage 1% of cement", "n/a"),
]


def below_grade_sheet(rng: random.Random) -> SheetSpec:
    sheet = SheetSpec(
        "Below Grade",
        ["Ref", "Element", "System", "Membrane Thickness", "Protection", "Drainage", "Notes"],
    )
    sheet.add(
        [
            "BG-00",
            "Basement retaining walls and slab",
            "Bituminous sheet membrane to walls, pre-applied HDPE sheet membrane under slab",
            "4.0 mm walls, 1.2 mm slab",
            "HDPE protection board to walls",
            "Strip drain at the wall base to the sump pit",
            "Below grade scope summary: tanking of the full basement box to resist hydrostatic pressure "
            "from a groundwater table measured 2.1 m below the B3 slab.",
        ],
        "q_below_grade",
        "q_hydrostatic",
    )
    for index in range(150):
        element, system, thickness, protection = BELOW_GRADE_ELEMENTS[index % len(BELOW_GRADE_ELEMENTS)]
        grid = f"grid line {rng.choice('ABCDEFGH')}{rng.randint(1, 12)}"
        drainage = rng.choice(
            [
                "Strip drain to sump",
                "Ag line behind wall to sump",
                "No drainage required",
                "Drainage cell behind protection board",
            ]
        )
        notes = (
            f"{element} at {grid}: {system.lower()} on {_pick(rng, SUBSTRATES)}, {_pick(rng, PREP)}, "
            f"{_pick(rng, DETAILS)}. {_pick(rng, CONDITIONS)}"
        )
        tags: list[str] = []
        if index == 3:
            notes = (
                "Lift pit 1 membrane thickness: crystalline slurry in two coats of 1.0 kg/m2 each, "
                "giving a minimum 2.0 kg/m2 total, applied to the pit walls and base with a "
                "hydrostatic pressure relief cove at the base joint."
            )
            tags = ["q_lift_pit_thickness", "q_hydrostatic"]
        sheet.add([f"BG-{index + 1:02d}", element, system, thickness, protection, drainage, notes], *tags)
    return sheet


# --- Products ------------------------------------------------------------------------------------------

PRODUCTS = [
    (
        "P-101",
        "Bitugard 4000 SBS sheet",
        "Bitugard",
        "Bituminous sheet membrane",
        "1 roll per 9.5 m2",
        "10 m roll",
    ),
    (
        "P-102",
        "Preproof HD 1.2",
        "Ardent",
        "Pre-applied HDPE sheet membrane",
        "1 roll per 30 m2",
        "30 m2 roll",
    ),
    ("P-103", "Krystal Slurry", "Kryton", "Crystalline slurry", "1.0 kg/m2 per coat", "25 kg bag"),
    ("P-104", "Krystal Admix KIM", "Kryton", "Crystalline admixture", "1% of cement weight", "20 kg pail"),
    (
        "P-105",
        "Polyseal PU 550",
        "Polyseal",
        "Polyurethane liquid membrane",
        "1.8 L/m2 for 1.5 mm",
        "15 L pail",
    ),
    ("P-106", "Rootstop 300", "Polyseal", "Root barrier sheet", "1 roll per 50 m2", "50 m2 roll"),
    ("P-107", "Drainmat 20", "Geoflow", "Drainage cell", "1 sheet per 1 m2", "1 m2 sheet"),
    ("P-108", "Aquacryl W", "Aquacryl", "Acrylic wet area membrane", "1.2 L/m2 two coats", "10 L pail"),
    (
        "P-109",
        "Jointflex EPDM 200",
        "Jointflex",
        "Preformed EPDM expansion joint",
        "per lineal metre",
        "25 m roll",
    ),
    (
        "P-110",
        "Protectaboard 6",
        "Ardent",
        "HDPE protection board",
        "1 sheet per 2.88 m2",
        "1.2 x 2.4 m sheet",
    ),
]
PRODUCT_TAGS = {
    "P-101": ["q_below_grade"],
    "P-102": ["q_below_grade"],
    "P-103": ["q_lift_pit_price"],
    "P-104": ["q_admixture"],
    "P-105": ["q_podium_scope"],
    "P-106": ["q_planter"],
    "P-109": ["q_joint"],
}


def products_sheet(rng: random.Random) -> SheetSpec:
    sheet = SheetSpec(
        "Products",
        ["Product Code", "Product", "Manufacturer", "Type", "Coverage", "Pack Size", "Application Notes"],
    )
    for code, name, maker, kind, coverage, pack in PRODUCTS:
        notes = (
            f"{name} is the nominated {kind.lower()} for this job. Apply per the manufacturer's data sheet; "
            f"coverage {coverage}. {_pick(rng, CONDITIONS)}"
        )
        if code == "P-104":
            notes = (
                "Krystal Admix KIM dosage: 1% of cement weight added at the batch plant; wet cure the "
                "concrete for a minimum of 7 days and do not use curing compounds on admixture concrete."
            )
        sheet.add([code, name, maker, kind, coverage, pack, notes], *PRODUCT_TAGS.get(code, []), "q_coverage")
    # Accessory and alternative products: many similar rows.
    accessories = [
        "primer",
        "sealant",
        "reinforcing fabric",
        "termination bar",
        "bond breaker",
        "repair mortar",
    ]
    for index in range(110):
        code = f"P-{200 + index}"
        accessory = accessories[index % len(accessories)]
        base = PRODUCTS[index % len(PRODUCTS)]
        sheet.add(
            [
                code,
                f"{base[2]} {accessory} {rng.randint(10, 99)}",
                base[2],
                f"Accessory: {accessory}",
                f"{rng.choice(['0.2', '0.25', '0.3', '0.5'])} L/m2"
                if accessory == "primer"
                else "as required",
                rng.choice(["5 L pail", "600 ml sausage", "50 m roll", "20 kg bag", "3 m length"]),
                f"{accessory.capitalize()} compatible with {base[1]}; use with {base[3].lower()} "
                f"only. {_pick(rng, CONDITIONS)} Store off the ground and out of direct sun.",
            ]
        )
    return sheet


# --- Pricing -------------------------------------------------------------------------------------------

PRICE_LINES = [
    (
        "Basement retaining walls: bituminous sheet membrane and protection board",
        1860,
        "m2",
        68.50,
        "q_pricing",
    ),
    ("Slab on ground: pre-applied HDPE sheet membrane", 2240, "m2", 42.00, "q_pricing"),
    ("Lift pits and sump pit: crystalline slurry two coats", 96, "m2", 55.00, "q_pricing"),
    ("Podium slab: polyurethane liquid membrane 1.5 mm", 1420, "m2", 61.00, "q_pricing"),
    ("Planter boxes: membrane, root barrier and drainage cell", 310, "m2", 96.00, "q_pricing"),
    ("Wet areas: acrylic membrane to AS 3740, 84 apartments", 84, "apartment", 1150.00, "q_pricing"),
    ("Expansion joints: preformed EPDM joint strip", 220, "lm", 138.00, "q_joint"),
]


def pricing_sheet(rng: random.Random) -> SheetSpec:
    sheet = SheetSpec(
        "Pricing", ["Line", "Description", "Area", "Quantity", "Unit", "Rate", "Amount", "Notes"]
    )
    sheet.formats = {5: CURRENCY, 6: CURRENCY}
    extra_tags = {
        2: ["q_lift_pit_price"],
        0: ["q_sheet_rate"],
        3: ["q_podium_quantity"],
    }
    for index, (description, quantity, unit, rate, tag) in enumerate(PRICE_LINES):
        notes = "Rate includes surface preparation, detailing and one mobilisation per level."
        sheet.add(
            [f"PR-{index + 1:03d}", description, "Main works", quantity, unit, rate, "=FORMULA", notes],
            tag,
            *extra_tags.get(index, []),
        )
    for index in range(170):
        area, system, unit = SCOPE_SYSTEMS[index % len(SCOPE_SYSTEMS)]
        level = LEVELS[index % len(LEVELS)]
        quantity = rng.randint(5, 240)
        rate = round(rng.uniform(18, 160), 2)
        sheet.add(
            [
                f"PR-{index + 8:03d}",
                f"{area.capitalize()} at {level}: {_pick(rng, DETAILS)} and {_pick(rng, PREP)}",
                level,
                quantity,
                unit,
                rate,
                "=FORMULA",
                f"Breakdown line for {system}. {_pick(rng, CONDITIONS)}",
            ]
        )
    sheet.add(
        [
            "PR-180",
            "After hours and weekend work premium for restricted site access",
            "Preliminaries",
            40,
            "hour",
            145.00,
            "=FORMULA",
            "Applies where the builder's access windows force work outside 7 am to 5 pm weekdays.",
        ],
        "q_after_hours",
    )
    for line, text, amount in [
        ("PS-01", "Provisional sum: repair of existing cracked retaining wall before membrane", 12500.0),
        ("PS-02", "Provisional sum: injection of active leaks in lift pit 2", 6800.0),
        ("PS-03", "Provisional sum: additional flood test re-runs requested by the client", 3200.0),
    ]:
        sheet.add(
            [line, text, "Provisional", 1, "sum", amount, "=FORMULA", "Adjusted against actual cost."],
            "q_provisional",
        )
    sheet.add(["", "Subtotal (excluding GST)", "", None, "", None, "=SUBTOTAL", ""], "q_total")
    sheet.add(["", "GST 10%", "", None, "", None, "=GST", ""], "q_total")
    sheet.add(["", "Total contract price including GST", "", None, "", None, "=TOTAL", ""], "q_total")
    return sheet


# --- Terms & Conditions, Exclusions, Site Conditions -----------------------------------------------------

TERMS = [
    ("Parties", f"Client: {CLIENT}. Contractor: {CONTRACTOR}. Project: {PROJECT}.", "q_client"),
    ("Validity", "This quotation is valid for 60 days from the date of issue, 14 March 2025.", "q_validity"),
    (
        "Payment terms",
        "Progress claims are issued monthly on the 25th for work completed; payment is due 30 days from "
        "the end of the month of the claim.",
        "q_payment",
    ),
    (
        "Retention",
        "Retention of 5% of each progress claim is held, reducing to 2.5% at practical completion and "
        "released in full at the end of the defects liability period.",
        "",
    ),
    (
        "Warranty",
        "Warranty period: 10 years on membrane materials and workmanship from practical completion, "
        "subject to the membrane not being damaged by others; the 7 year statutory warranty also applies.",
        "q_warranty",
    ),
    (
        "Hydrostatic conditions",
        "The below grade warranty covers hydrostatic pressure up to the design groundwater level shown on "
        "the geotechnical report; higher water tables void the tanking warranty unless redesigned.",
        "q_hydrostatic",
    ),
]
TERM_FILLER = [
    "Variations must be approved in writing before work proceeds and are priced at the schedule of rates.",
    "The builder provides clear and safe access, lighting, power and water at no cost to the contractor.",
    "Delays caused by others are claimable as standing time at the hourly rates in the pricing schedule.",
    "The contractor's public liability insurance is $20 million; certificates are available on request.",
    "Work areas must be handed over clean, dry and free of other trades for the duration of the works.",
    "Any dispute is first referred to senior representatives of both parties to resolve within 14 days.",
]
LIABILITY = "Limitation of liability. " + " ".join(
    f"To the extent permitted by law, the contractor's aggregate liability under clause {n} for any "
    f"loss arising from the works, including water ingress after handover, is limited to the value of "
    f"the works performed under this quotation, and indirect or consequential loss is excluded."
    for n in range(1, 9)
)


def terms_sheet(rng: random.Random) -> SheetSpec:
    sheet = SheetSpec("Terms & Conditions", ["Clause", "Heading", "Term"])
    for index, (heading, term, tag) in enumerate(TERMS):
        sheet.add([f"{index + 1}.1", heading, term], tag)
    sheet.add([f"{len(TERMS) + 1}.1", "Liability", LIABILITY])  # long: split into continuation chunks
    for index in range(110):
        base = TERM_FILLER[index % len(TERM_FILLER)]
        clause = f"{len(TERMS) + 2 + index // 6}.{index % 6 + 1}"
        sheet.add(
            [
                clause,
                "General conditions",
                f"{base} {_pick(rng, CONDITIONS)} This clause is part {index + 1}.",
            ]
        )
    return sheet


EXCLUSION_ITEMS = [
    "Dewatering of excavations and control of groundwater during membrane installation",
    "Structural repairs to concrete other than the provisional sums listed",
    "Removal of existing membranes or coatings",
    "Scaffolding, edge protection and hoisting",
    "Supply of power, water and site amenities",
    "Repairs to damage caused by other trades after handover",
    "Testing by independent inspectors other than flood tests listed",
    "Painting, tiling and screeds over the membrane",
]


def exclusions_sheet(rng: random.Random) -> SheetSpec:
    sheet = SheetSpec("Exclusions", ["Ref", "Exclusion", "Notes"])
    sheet.add(
        ["EX-01", EXCLUSION_ITEMS[0], "Dewatering and groundwater control are by the builder; membranes "
         "cannot be installed against running water or on saturated substrate."],
        "q_dewatering",
    )  # fmt: skip
    for index in range(88):
        item = EXCLUSION_ITEMS[1 + index % (len(EXCLUSION_ITEMS) - 1)]
        sheet.add(
            [
                f"EX-{index + 2:02d}",
                item,
                f"Excluded from this quotation for {_pick(rng, LEVELS).lower()}; "
                f"can be priced as a variation on request. {_pick(rng, CONDITIONS)}",
            ]
        )
    return sheet


def site_sheet(rng: random.Random) -> SheetSpec:
    sheet = SheetSpec("Site Conditions", ["Ref", "Date", "Location", "Observation", "Risk", "Action"])
    sheet.formats = {1: DATE_FORMAT}
    start = dt.datetime(2025, 2, 3)
    planted = {
        0: (
            "B3 excavation",
            "Groundwater seeping through the shoring wall at the B3 level; water ponding at the bulk "
            "excavation base after rain.",
            "High",
            "Builder to run dewatering pumps continuously during membrane works.",
            ["q_dewatering"],
        ),
        1: (
            "Site entry, Bank Street",
            "Site access restricted to 9:30 am to 2:30 pm on weekdays by the council traffic "
            "management plan; no deliveries on Saturdays.",
            "Medium",
            "Allow for after hours work and small deliveries.",
            ["q_after_hours"],
        ),
    }
    observations = [
        "Honeycombing at the base of the retaining wall",
        "Form ties left protruding from the wall",
        "Cold joint without waterstop",
        "Standing water on podium slab",
        "Penetrations cast without puddle flanges",
        "Curing compound on the slab surface",
    ]
    for index in range(100):
        date = start + dt.timedelta(days=index // 3)
        if index in planted:
            location, observation, risk, action, tags = planted[index]
        else:
            location = f"{_pick(rng, LEVELS)}, grid {rng.choice('ABCDEFGH')}{rng.randint(1, 12)}"
            observation = (
                f"{_pick(rng, observations)} observed during walk-through; {_pick(rng, PREP)} needed."
            )
            risk = rng.choice(["Low", "Low", "Medium", "Medium", "High"])
            action = f"Builder to rectify before membrane works. {_pick(rng, CONDITIONS)}"
            tags = []
        if risk == "High":
            tags = [*tags, "q_high_risk"]
        sheet.add([f"SC-{index + 1:03d}", date, location, observation, risk, action], *tags)
    return sheet


def hidden_sheet() -> SheetSpec:
    sheet = SheetSpec("Rates Lookup", ["Code", "Internal Rate"])
    for code, *_ in PRODUCTS:
        sheet.add([code, "internal cost rate, not for the client"])
    return sheet


# --- Workbook writing ----------------------------------------------------------------------------------

TITLE_ROW, HEADER_ROW = 1, 3


def write_workbook(path: Path, sheets: list[SheetSpec]) -> dict[str, dict[int, int]]:
    """Write the workbook; return sheet -> {index in rows -> Excel row number}."""
    workbook = openpyxl.Workbook()
    workbook.remove(workbook.active)
    workbook.properties.created = FIXED_TIME
    workbook.properties.modified = FIXED_TIME
    workbook.properties.creator = CONTRACTOR
    cached: dict[str, dict[str, float]] = {}
    placement: dict[str, dict[int, int]] = {}
    for spec in sheets:
        ws = workbook.create_sheet(spec.name)
        if spec.name == "Rates Lookup":
            ws.sheet_state = "hidden"
        width = len(spec.headers)
        ws.cell(TITLE_ROW, 1, f"{spec.name}: {PROJECT} ({QUOTE_NO})").font = Font(bold=True, size=14)
        ws.merge_cells(start_row=TITLE_ROW, start_column=1, end_row=TITLE_ROW, end_column=width)
        for col, header in enumerate(spec.headers, start=1):
            ws.cell(HEADER_ROW, col, header).font = Font(bold=True)
        rows: dict[int, int] = {}
        values: dict[str, float] = {}
        amounts: list[float] = []
        for index, row in enumerate(spec.rows):
            excel_row = HEADER_ROW + 1 + index
            rows[index] = excel_row
            for col, value in enumerate(row, start=1):
                if value is None:
                    continue
                cell = ws.cell(excel_row, col)
                if value == "=FORMULA":
                    cell.value = f"=D{excel_row}*F{excel_row}"
                    amount = round(float(row[3]) * float(row[5]), 2)  # type: ignore[arg-type]
                    values[cell.coordinate] = amount
                    amounts.append(amount)
                elif value in ("=SUBTOTAL", "=GST", "=TOTAL"):
                    first, last = HEADER_ROW + 1, excel_row - 1
                    subtotal = round(sum(amounts), 2)
                    formula, amount = {
                        "=SUBTOTAL": (f"=SUM(G{first}:G{excel_row - 1})", subtotal),
                        "=GST": (f"=G{excel_row - 1}*0.1", round(subtotal * 0.1, 2)),
                        "=TOTAL": (f"=G{excel_row - 2}+G{excel_row - 1}", round(subtotal * 1.1, 2)),
                    }[str(value)]
                    del first, last
                    cell.value = formula
                    values[cell.coordinate] = amount
                else:
                    cell.value = value
                if col - 1 in spec.formats:
                    cell.number_format = spec.formats[col - 1]
        placement[spec.name] = rows
        cached[spec.name] = values
        if spec.name == "Scope of Works":
            # A vertical merge: the Area cell of the first two podium rows spans both rows.
            podium = next(i for i, r in enumerate(spec.rows) if r[1] == "Podium Slab" and r[2] != "All")
            ws.cell(rows[podium + 1], 2).value = None
            ws.merge_cells(start_row=rows[podium], start_column=2, end_row=rows[podium + 1], end_column=2)
    buffer = io.BytesIO()
    workbook.save(buffer)
    path.write_bytes(_with_cached_values(buffer.getvalue(), workbook.sheetnames, cached))
    return placement


def _with_cached_values(data: bytes, names: list[str], cached: dict[str, dict[str, float]]) -> bytes:
    """Put Excel-style cached results into formula cells and fix zip entry dates (reproducible bytes)."""
    source = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            content = source.read(info.filename)
            match = re.fullmatch(r"xl/worksheets/sheet(\d+)\.xml", info.filename)
            if match:
                values = cached.get(names[int(match.group(1)) - 1], {})
                text = content.decode("utf-8")
                for ref, value in values.items():
                    pattern = re.compile(rf'(<c r="{ref}"[^>]*>)(<f>[^<]*</f>)<v\s*/?>(</v>)?')
                    text = pattern.sub(rf"\g<1>\g<2><v>{value!r}</v>", text)
                content = text.encode("utf-8")
            elif info.filename == "docProps/core.xml":  # openpyxl stamps "modified" with the clock
                stamp = FIXED_TIME.strftime("%Y-%m-%dT%H:%M:%SZ")
                text = re.sub(r"(<dcterms:modified[^>]*>)[^<]*", rf"\g<1>{stamp}", content.decode("utf-8"))
                content = text.encode("utf-8")
            entry = zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0))
            entry.compress_type = zipfile.ZIP_DEFLATED
            target.writestr(entry, content)
    return out.getvalue()


# --- Specification PDF and site memo -------------------------------------------------------------------

SPEC_SECTIONS: list[tuple[str, list[tuple[str, str | None]]]] = [
    (
        "1. General",
        [
            (
                f"This specification covers the waterproofing of {PROJECT} for {CLIENT}. It applies to the "
                "basement, lift pits, podium, planter boxes, balconies and wet areas described in the quote.",
                None,
            ),
            (
                "The contractor shall hold a current waterproofing licence and shall provide product data "
                "sheets, an inspection and test plan and a sample of each membrane before work starts.",
                None,
            ),
        ],
    ),
    (
        "2. Materials",
        [
            (
                "Crystalline admixture shall be dosed at 1% of cement weight at the batch plant. Concrete "
                "with admixture shall be wet cured for 7 days; curing compounds shall not be used.",
                "q_admixture",
            ),
            (
                "Sheet membranes shall be stored on pallets under cover. Liquid membranes shall be applied "
                "within their pot life and at the film thickness the data sheet states.",
                None,
            ),
        ],
    ),
    (
        "3. Execution: Below Grade",
        [
            (
                "Retaining walls shall be tanked with a fully bonded sheet membrane lapped 100 mm, with a "
                "protection board and strip drain at the wall base. Slabs on ground shall have a "
                "pre-applied membrane with all laps taped.",
                None,
            ),
            (
                "Lift pits shall receive a crystalline slurry in two coats to walls and base, with a cove "
                "at the base joint to resist hydrostatic pressure.",
                None,
            ),
        ],
    ),
    (
        "4. Execution: Podium and Wet Areas",
        [
            (
                "Podium membranes shall be laid to falls of at least 1 in 100 to outlets and turned up "
                "150 mm at walls. Planter boxes shall have a root barrier over the membrane.",
                None,
            ),
            (
                "Wet area membranes shall comply with AS 3740, with bond breakers at junctions and puddle "
                "flanges at floor wastes. Each wet area shall be inspected before tiling.",
                "q_wet_areas",
            ),
        ],
    ),
    (
        "5. Testing and Inspection",
        [
            (
                "Flood testing: every podium and planter membrane shall be flood tested for 24 hours at a "
                "water depth of 50 mm. Leaks shall be repaired and the area re-tested.",
                "q_flood_test",
            ),
            (
                "Wet area inspection: the site supervisor shall inspect and photograph every wet area "
                "membrane and record it on the inspection and test plan before tiling.",
                "q_wet_areas",
            ),
        ],
    ),
    (
        "6. Warranty",
        [
            (
                "The contractor shall provide a 10 year warranty on membrane materials and workmanship, "
                "signed jointly with the membrane manufacturer, from practical completion.",
                None,
            ),
        ],
    ),
]


def write_pdf(path: Path) -> dict[str, list[str]]:
    """Write the specification; return query id -> marker text of the paragraphs that answer it."""
    pdf = FPDF(format="A4")
    pdf.set_creation_date(FIXED_TIME.replace(tzinfo=dt.UTC))
    pdf.set_producer("esbubble sample generator")
    pdf.set_title("Waterproofing Specification")
    markers: dict[str, list[str]] = {}
    for number, (heading, paragraphs) in enumerate(SPEC_SECTIONS):
        if number % 2 == 0:
            pdf.add_page()
        pdf.set_font("Helvetica", "B", 15)
        pdf.multi_cell(0, 9, heading, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(2)
        pdf.set_font("Helvetica", "", 11)
        for text, tag in paragraphs:
            pdf.multi_cell(0, 6, text, new_x="LMARGIN", new_y="NEXT")
            pdf.ln(4)
            if tag:
                markers.setdefault(tag, []).append(text[:60])
    pdf.output(str(path))
    return markers


MEMO = f"""# Site Memo: {PROJECT}

Prepared by {CONTRACTOR} after the site inspection on 12 March 2025 for quote {QUOTE_NO}.

## Attendance

Site manager for the builder, the client's project manager from {CLIENT}, and our estimator.

## Access and Logistics

Site access is restricted to 9:30 am to 2:30 pm on weekdays under the council traffic management plan.
Deliveries are by small rigid truck only; materials are stored in the B1 compound.

Programmed start for basement tanking is 5 May 2025, following the B3 slab pour.

## Existing Conditions

### Basement

Groundwater was seeping through the shoring wall at B3 and ponding at the bulk excavation base. The
builder confirmed dewatering pumps will run during membrane works.

### Podium

The podium slab is poured but not yet cured; falls to outlets are inadequate at grid C4 and need a
screed to achieve 1 in 100 before the membrane goes down.

## Actions

| Action | Owner | Due |
| --- | --- | --- |
| Confirm dewatering plan for B3 | Builder | 21 March 2025 |
| Issue revised podium falls drawing | Client | 28 March 2025 |
| Submit product data sheets and ITP | {CONTRACTOR} | 21 March 2025 |
"""
MEMO_TAGS = {
    "q_start_date": "Programmed start for basement tanking",
    "q_dewatering": "Groundwater was seeping",
}


# --- Query set and profile -----------------------------------------------------------------------------

QUERIES: list[tuple[str, str, str]] = [
    ("q_warranty", "warranty period", "narrow_fact"),
    ("q_client", "client name", "narrow_fact"),
    ("q_validity", "how long is the quote valid", "narrow_fact"),
    ("q_payment", "payment terms for progress claims", "narrow_fact"),
    ("q_lift_pit_thickness", "lift pit membrane thickness", "narrow_fact"),
    ("q_start_date", "programmed start date for basement tanking", "narrow_fact"),
    ("q_scope", "scope of work", "multi_facet"),
    ("q_podium_scope", "podium waterproofing scope and membrane product", "multi_facet"),
    ("q_planter", "planter box waterproofing system and root barrier", "multi_facet"),
    ("q_wet_areas", "wet area waterproofing standard and inspection", "multi_facet"),
    ("q_admixture", "crystalline admixture dosage and curing", "multi_facet"),
    ("q_flood_test", "flood testing requirements for podium membranes", "multi_facet"),
    ("q_below_grade", "below grade scope and products", "cross_sheet"),
    ("q_lift_pit_price", "lift pit waterproofing price and product", "cross_sheet"),
    ("q_dewatering", "dewatering and groundwater exclusions and site observations", "cross_sheet"),
    ("q_after_hours", "site access restrictions and after hours work pricing", "cross_sheet"),
    ("q_hydrostatic", "hydrostatic pressure treatment and warranty conditions", "cross_sheet"),
    ("q_joint", "expansion joint product and price", "cross_sheet"),
    ("q_pricing", "pricing line items for waterproofing", "table_dependent"),
    ("q_total", "total contract price including GST", "table_dependent"),
    ("q_sheet_rate", "rate per square metre for basement retaining wall sheet membrane", "table_dependent"),
    ("q_podium_quantity", "quantity of podium polyurethane membrane", "table_dependent"),
    ("q_coverage", "product coverage rates", "table_dependent"),
    ("q_high_risk", "site observations with high risk", "table_dependent"),
    ("q_provisional", "provisional sums", "table_dependent"),
]

PROFILE = """# Profile for the sample quote job (data/sample). Format: esbubble/config.py.

[bubble]
token_budget = 800
candidate_k = 200
# overlap_threshold (δ) is left to the redundancy measure's default: 0.85 against the most similar
# chunk (the paper's 0.55 belongs to its own measure, overlap = "bubble").
slack_policy = "global_pool"
encoding = "o200k_base"
variant = "full"

[priors.sections]
"Scope of Works" = 6.0
"Below Grade" = 3.0
"Products" = 2.0
"Pricing" = 2.0
"Site Conditions" = 0.5
"Exclusions" = -1.0
"Terms & Conditions" = -2.5

[priors.keywords]
waterproofing = 1.5
membrane = 1.0
warranty = 2.0
scope = 1.0
price = 1.0

[buckets.shares]
"Scope of Works" = 0.25
"Below Grade" = 0.15
"Products" = 0.12
"Pricing" = 0.15
"Terms & Conditions" = 0.08
"Exclusions" = 0.05
"Site Conditions" = 0.08
"Documents" = 0.12

[buckets.map]
"PDF" = "Documents"
"Text" = "Documents"
"""


def build(out: Path) -> dict[str, object]:
    """Write every sample file into ``out``; return a small summary."""
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(SEED)
    sheets = [
        scope_sheet(rng),
        below_grade_sheet(rng),
        products_sheet(rng),
        pricing_sheet(rng),
        terms_sheet(rng),
        exclusions_sheet(rng),
        site_sheet(rng),
        hidden_sheet(),
    ]
    placement = write_workbook(out / XLSX_NAME, sheets)
    pdf_markers = write_pdf(out / PDF_NAME)
    (out / MEMO_NAME).write_text(MEMO, encoding="utf-8")
    (out / "profile.toml").write_text(PROFILE, encoding="utf-8")

    gold: dict[str, list[str]] = {qid: [] for qid, _, _ in QUERIES}
    for spec in sheets:
        for index, tags in spec.tags.items():
            locator = f"sheet={spec.name}/row={placement[spec.name][index]}/part=0"
            for tag in tags:
                gold[tag].append(chunk_id(XLSX_NAME, locator))
    options = IngestOptions()
    workbook_ids = {c.chunk_id for c in read_document(out / XLSX_NAME, options, doc_id=XLSX_NAME)}
    unread = [qid for qid, ids in gold.items() for g in ids if g not in workbook_ids]
    if unread:
        raise SystemExit(f"planted rows not read back from the workbook for: {sorted(set(unread))}")
    for doc_id, markers in ((PDF_NAME, pdf_markers), (MEMO_NAME, {k: [v] for k, v in MEMO_TAGS.items()})):
        chunks = read_document(out / doc_id, options, doc_id=doc_id)
        for tag, texts in markers.items():
            for text in texts:
                found = [c.chunk_id for c in chunks if text in c.text]
                if len(found) != 1:
                    raise SystemExit(f"marker {text!r} found {len(found)} times in {doc_id}")
                gold[tag].extend(found)
    if any(not ids for ids in gold.values()):
        raise SystemExit(f"gold evidence missing: {[q for q, ids in gold.items() if not ids]}")
    with (out / "queries.jsonl").open("w", encoding="utf-8") as handle:
        for qid, query, category in QUERIES:
            record = {"id": qid, "query": query, "category": category, "gold": sorted(set(gold[qid]))}
            handle.write(json.dumps(record) + "\n")
    return {"rows": sum(len(s.rows) for s in sheets if s.name != "Rates Lookup"), "queries": len(QUERIES)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).resolve().parent.parent / "data" / "sample"
    )
    args = parser.parse_args()
    print(json.dumps(build(args.out)))


if __name__ == "__main__":
    main()
