function zoom(el){var lb=document.getElementById('lightbox');
document.getElementById('lightbox-img').src=el.getAttribute('href')||el.src;
lb.style.display='flex';return false;}
