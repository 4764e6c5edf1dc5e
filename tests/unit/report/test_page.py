"""The HTML page (kvmtune.report.page): the renderer's tables and the
plot in one file that loads nothing else."""

import base64
import html.parser

from kvmtune.report import page
from kvmtune.report import plot
from kvmtune.report import render
from kvmtune.results import units
from tests.unit.report.runs import analysed
from tests.unit.report.runs import before_after_bare
from tests.unit.report.runs import sweep


class Parsed(html.parser.HTMLParser):
    """The tables (by class: rows of cell texts) and images of a page."""

    def __init__(self, text):
        super().__init__()
        self.tables, self.images, self.cell = {}, [], None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == 'table':
            self.rows = self.tables.setdefault(attrs.get('class'), [])
        elif tag == 'tr':
            self.rows.append([])
        elif tag in ('td', 'th'):
            self.cell = ''
        elif tag == 'img':
            self.images.append(attrs)

    def handle_endtag(self, tag):
        if tag in ('td', 'th'):
            self.rows[-1].append(self.cell)
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def test_the_page_is_the_text_tables_and_the_plot(tmp_path):
    an = analysed(tmp_path, *sweep(bare=90000.0))
    png = plot.png_bytes(an)
    text = page.html_page(an, png)
    parsed = Parsed(text)
    header, rows = render.vm_rows(an)
    assert parsed.tables['results'] == [header, *rows]
    header, rows = render.fit_rows(an)
    assert parsed.tables['fits'] == [header, *rows]
    img, = parsed.images
    assert img['class'] == 'plot'
    prefix = 'data:image/png;base64,'
    assert img['src'].startswith(prefix)
    assert base64.b64decode(img['src'][len(prefix):]) == png
    assert f'Figures are {units.EMULATED}' in text


def test_a_step_table_has_no_fits_and_labels_are_escaped(tmp_path):
    docs = list(before_after_bare())
    docs[0] = ('<before>.json', docs[0][1])
    an = analysed(tmp_path, *docs)
    text = page.html_page(an, b'png')
    parsed = Parsed(text)
    header, rows = render.step_rows(an)
    assert parsed.tables['results'] == [header, *rows]
    assert '<before>' in parsed.tables['results'][0]
    assert '&lt;before&gt;' in text and 'fits' not in parsed.tables
