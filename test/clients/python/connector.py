"""
The calls of the Python connector (clients.md §3, smartcitizen-connector 1.4.0), made the way it
makes them: `requests` for single objects, lists and posts, `aiohttp` for readings (URLs pasted
together unencoded), pydantic models with the fields and types its models require (§4 rules 26,
28, 29, 30), and its Link-header parser (§3.1). It takes one JSON argument, a command, and prints
one JSON document: what the connector would have seen.
"""
import asyncio
import json
import os
import sys
from datetime import datetime
from typing import Any, List, Optional

import aiohttp
import requests
from pydantic import BaseModel, TypeAdapter, ValidationError


# Fields and types the connector's models require (conn models/models.py, as clients.md §4 lists them).
class Measurement(BaseModel):
    id: int
    uuid: str
    name: str
    description: str
    definition: Optional[str] = None


class Sensor(BaseModel):
    id: int
    uuid: str
    name: str
    description: str
    unit: Optional[str] = None
    measurement: Optional[Measurement] = None
    datasheet: Optional[str] = None
    unit_definition: Optional[str] = None
    value: Optional[float] = None
    prev_value: Optional[float] = None
    last_reading_at: Optional[datetime] = None
    tags: Optional[List[str]] = []
    default_key: Optional[str] = None


class Owner(BaseModel):
    id: int
    username: str


class Location(BaseModel):
    city: Optional[str] = None
    country_code: Optional[str] = None
    country: Optional[str] = None
    exposure: Optional[str] = None
    elevation: Optional[float] = None
    geohash: Optional[str] = None
    latitude: Optional[float] = None
    longitude: Optional[float] = None


class HardwareStatus(BaseModel):
    id: str
    mac: str
    time: str
    esp_bd: str
    hw_ver: str
    sam_bd: str
    esp_ver: str
    sam_ver: str
    rcause: Optional[str] = None


class HardwareInfo(BaseModel):
    name: str
    type: str
    version: Optional[str] = None
    slug: str


class Postprocessing(BaseModel):
    id: Optional[int] = None
    blueprint_url: Optional[str] = None
    hardware_url: Optional[str] = None
    forwarding_params: Optional[int] = None
    meta: Optional[str] = None
    latest_postprocessing: Optional[datetime] = None
    created_at: Optional[datetime] = None
    updated_at: Optional[datetime] = None
    device_id: Optional[int] = None


class Data(BaseModel):
    sensors: Optional[List[Sensor]] = None


class Notifications(BaseModel):
    low_battery: bool
    stopped_publishing: bool


class Policy(BaseModel):
    is_private: Any
    precise_location: Any
    enable_forwarding: Any


class Device(BaseModel):
    id: int
    uuid: str
    name: str
    description: Optional[str] = None
    state: str
    postprocessing: Optional[Postprocessing] = None
    hardware: HardwareInfo
    system_tags: List[str]
    user_tags: List[str]
    data_policy: Optional[Policy] = None
    notify: Notifications
    last_reading_at: Optional[datetime] = None
    created_at: Optional[datetime] = None
    updated_at: datetime
    owner: Optional[Owner] = None
    data: Optional[Data] = None
    location: Optional[Location] = None
    device_token: str = 'FILTERED'


class ReducedDevice(BaseModel):
    id: int
    name: str
    description: Optional[str] = None
    state: str
    hardware: HardwareInfo
    system_tags: List[str]
    user_tags: List[str]
    last_reading_at: Optional[datetime] = None
    location: Optional[Location] = None


class Experiment(BaseModel):
    id: Optional[int] = None
    name: str
    description: Optional[str] = ''
    owner_id: Optional[int] = None
    active: Optional[bool] = None
    is_test: bool
    starts_at: Optional[datetime] = None
    ends_at: Optional[datetime] = None
    created_at: Optional[datetime] = None
    updated_at: Optional[datetime] = None
    device_ids: Optional[List[int]] = None


class User(BaseModel):
    id: int
    uuid: str
    username: str
    role: Optional[str] = ''
    devices: Optional[List[Device]] = None
    profile_picture: str
    location: Location
    updated_at: datetime
    forwarding_token: str
    forwarding_username: str


MODELS = {
    'Device': Device, 'ReducedDevice': ReducedDevice, 'Sensor': Sensor, 'Measurement': Measurement,
    'Experiment': Experiment, 'User': User,
}


def headers():
    """conn tools.get_request_headers: a Bearer only when SC_BEARER is set."""
    if 'SC_BEARER' in os.environ:
        return {'Authorization': 'Bearer ' + os.environ['SC_BEARER']}
    return None


def process_headers(h):
    """conn tools.process_headers, step for step: split on ',', drop spaces, split on ';'."""
    result = {}
    if 'total' in h:
        result['total_pages'] = h['total']
    if 'per-page' in h:
        result['per_page'] = h['per-page']
    if 'link' in h:
        for item in h.get('link').split(','):
            chunk = item.replace(' ', '').split(';')
            if 'rel' in chunk[1]:
                which = chunk[1].replace('"', '').split('=')[1]
                if which in ('next', 'last', 'prev', 'first'):
                    result[which] = chunk[0].strip('<').strip('>')
    return result


def errors_of(err: ValidationError):
    return [{'loc': [str(p) for p in e['loc']], 'msg': e['msg']} for e in err.errors()]


def get_one(cmd):
    r = requests.get(cmd['url'], headers=headers())
    out = {'status': r.status_code}
    try:
        body = r.json()
    except ValueError:
        return {**out, 'json': False}
    try:
        TypeAdapter(MODELS[cmd['model']]).validate_python(body)
        out['valid'] = True
    except ValidationError as err:
        out['valid'] = False
        out['errors'] = errors_of(err)
    if cmd['model'] == 'Device' and isinstance(body, dict):
        out['load'] = load_device(body)
    return out


def load_device(body):
    """conn SCDevice.__load__: the raw keys it reads besides the model."""
    seen = {}
    status = body['hardware']['last_status_message']
    if status != '[FILTERED]':
        if status is not None:
            try:
                TypeAdapter(HardwareStatus).validate_python(status)
                seen['status_message'] = 'object'
            except ValidationError as err:
                seen['status_message'] = 'invalid'
                seen['status_errors'] = errors_of(err)
        else:
            seen['status_message'] = 'null'
    else:
        seen['status_message'] = 'filtered'
    if body['data_policy']['enable_forwarding'] != '[FILTERED]':
        TypeAdapter(Policy).validate_python(body['data_policy'])
        seen['data_policy'] = 'object'
    else:
        seen['data_policy'] = 'filtered'
    # __get_timezone__ reads both (and crashes without a location)
    seen['position'] = [body['location']['latitude'], body['location']['longitude']]
    return seen


def get_list(cmd):
    """conn get_devices/get_world_map/get_sensors...: follow `next` until it is gone or repeats."""
    url = cmd['url']
    pages = []
    items = []
    totals = []
    errors = []
    while True:
        r = requests.get(url)
        r.raise_for_status()
        h = process_headers(r.headers)
        pages.append(url)
        totals.append(h.get('total_pages'))
        body = r.json()
        try:
            TypeAdapter(List[MODELS[cmd['model']]]).validate_python(body)
        except ValidationError as err:
            errors.extend(errors_of(err))
        items.extend({'id': i.get('id'), 'name': i.get('name')} for i in body)
        if 'next' in h and h['next'] != url and len(pages) < 50:
            url = h['next']
        else:
            break
    return {'pages': pages, 'items': items, 'totals': totals, 'errors': errors}


async def readings(cmd):
    """conn SCDevice.get_data: one GET per sensor, at most 5 at once, the URL pasted unencoded."""
    base = cmd['base'].rstrip('/') + '/devices/' + str(cmd['device_id'])
    semaphore = asyncio.Semaphore(5)

    async def one(session, sensor_id):
        url = base + '/readings?'
        if cmd.get('min_date') is not None:
            url += f"from={cmd['min_date']}"
        if cmd.get('max_date') is not None:
            url += f"&to={cmd['max_date']}"
        if cmd.get('limit') is not None:
            url += f"&limit={cmd['limit']}"
        url += f"&rollup={cmd['rollup']}"
        url += f'&sensor_id={sensor_id}'
        url += '&function=avg'
        async with semaphore:
            async with session.get(url, headers=headers()) as response:
                raw = await response.read()
                out = {'sensor_id': sensor_id, 'status': response.status, 'sent': str(response.url.raw_path_qs)}
                try:
                    datum = json.loads(raw)
                except ValueError:
                    return {**out, 'json': False}
                if 'readings' not in datum:
                    return {**out, 'json': True, 'readings': None, 'body': datum}
                return {**out, 'json': True, 'readings': datum['readings'], 'from': datum.get('from'), 'to': datum.get('to')}

    # A source address of the test's choice: anonymous callers are rate limited per address.
    connector = aiohttp.TCPConnector(local_addr=(cmd['local_addr'], 0)) if cmd.get('local_addr') else None
    async with aiohttp.ClientSession(connector=connector) as session:
        return await asyncio.gather(*(one(session, s) for s in cmd['sensor_ids']))


def post(cmd):
    """conn SCDevice.post_datum: one sensor per entry, chunks of 500, success is 200 or 201."""
    url = cmd['base'].rstrip('/') + f"/devices/{cmd['device_id']}/readings"
    h = headers() or {}
    h['Content-type'] = 'application/json'
    entries = [{'recorded_at': t, 'sensors': [{'id': cmd['sensor_id'], 'value': float(v)}]} for t, v in cmd['points']]
    statuses = []
    for i in range(0, len(entries), 500):
        r = requests.post(url, data=json.dumps({'data': entries[i:i + 500]}), headers=h)
        statuses.append(r.status_code)
    return {'statuses': statuses}


def search(cmd):
    """conn search_by_query: `q[...]` pasted in as written (requests escapes the brackets)."""
    r = requests.get(cmd['url'], headers=headers())
    try:
        body = r.json()
    except ValueError:
        body = None
    return {'status': r.status_code, 'sent': r.request.path_url, 'body': body}


def patch_postprocessing(cmd):
    """conn SCDevice.patch_postprocessing: PATCH devices/<id>/ (trailing slash), unset fields as null."""
    url = cmd['base'].rstrip('/') + f"/devices/{cmd['device_id']}/"
    h = headers() or {}
    h['Content-type'] = 'application/json'
    attributes = {k: None for k in ('id', 'blueprint_url', 'hardware_url', 'forwarding_params', 'meta', 'latest_postprocessing', 'created_at', 'updated_at', 'device_id')}
    attributes.update(cmd.get('attributes', {}))
    r = requests.patch(url, data=json.dumps({'postprocessing_attributes': attributes}), headers=h)
    try:
        body = r.json()
    except ValueError:
        body = None
    return {'status': r.status_code, 'body': body}


def main():
    cmd = json.loads(sys.argv[1])
    kind = cmd['cmd']
    if kind == 'get':
        out = get_one(cmd)
    elif kind == 'list':
        out = get_list(cmd)
    elif kind == 'readings':
        out = asyncio.run(readings(cmd))
    elif kind == 'post':
        out = post(cmd)
    elif kind == 'search':
        out = search(cmd)
    elif kind == 'patch_postprocessing':
        out = patch_postprocessing(cmd)
    else:
        raise SystemExit(f'unknown command {kind}')
    print(json.dumps(out, default=str))


if __name__ == '__main__':
    main()
