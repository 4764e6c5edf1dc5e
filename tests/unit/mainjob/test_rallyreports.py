"""A Rally task's reports written from Rally's own record, by Rally's
own exporters, in Rally's own database (conftest.rally_db); through a
process of its own in test_sweep (sweep.Rally.reports)."""

import json

from kvmtune.mainjob import rallyreports
from tests.unit.mainjob.conftest import ended_task


def test_an_ended_task_gets_both_reports(rally_db, tmp_path, capsys):
    conf = rally_db[3]
    uuid = ended_task(rally_db, 'aborted', [
        {'criterion': 'kvmtune_scaling', 'success': True, 'detail': 'ok'}])
    out_json, out_html = tmp_path / 'r.json', tmp_path / 'r.html'
    assert rallyreports.main([conf, uuid, str(out_json),
                              str(out_html)]) == 0
    assert capsys.readouterr().out == 'aborted\n'
    doc = json.loads(out_json.read_text())
    assert [t['uuid'] for t in doc['tasks']] == [uuid]
    assert doc['tasks'][0]['subtasks'][0]['title'] == 'disk scaling on m1.x'
    assert 'disk scaling on m1.x' in out_html.read_text()


def test_a_task_that_did_not_end_gets_no_report(rally_db, tmp_path):
    conf = rally_db[3]
    uuid = ended_task(rally_db, 'running', [])
    out_json, out_html = tmp_path / 'r.json', tmp_path / 'r.html'
    assert rallyreports.write(conf, uuid, str(out_json),
                              str(out_html)) == 'running'
    assert not out_json.exists() and not out_html.exists()
